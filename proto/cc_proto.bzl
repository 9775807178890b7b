"""One macro that turns a .proto into a cc_library with the system protoc.

    cc_proto(name = "plan_cc_proto", src = "plan.proto", deps = [":sbp_cc_proto"])

generates plan.pb.{h,cc} (and plan.grpc.pb.{h,cc} with grpc = True) under the same
package path, so C++ code includes "proto/plan.pb.h". Imports are resolved from the
repository root, so a .proto imports "proto/sbp.proto"; `deps` must name the cc_proto of
each import so its .proto is visible to protoc and its library is linked.

The same holds when this repository is an external one (`local_repository` in a user's
WORKSPACE, docs/first_model.md): its files then sit under external/NAME/ of the execution
root, so protoc is pointed there (-I) and writes under the same prefix of GENDIR, where
the genrule's outputs are expected.
"""

PROTOC = "/usr/bin/protoc"
GRPC_PLUGIN = "/usr/bin/grpc_cpp_plugin"

# "" when this workspace builds the protos, "external/oneflow_cpp" (the name the user's
# WORKSPACE gives this repository) when another workspace does.
_ROOT = Label("//proto:cc_proto.bzl").workspace_root

def cc_proto(name, src, deps = [], grpc = False, visibility = None):
    base = src[:-len(".proto")]
    outs = [base + ".pb.h", base + ".pb.cc"]
    out_dir = "$(GENDIR)/" + _ROOT if _ROOT else "$(GENDIR)"
    plugin_flags = ""
    if grpc:
        outs += [base + ".grpc.pb.h", base + ".grpc.pb.cc"]
        plugin_flags = "--grpc_out=" + out_dir + " --plugin=protoc-gen-grpc=" + GRPC_PLUGIN
    native.filegroup(
        name = name + "_srcs",
        srcs = [src] + [d + "_srcs" for d in deps],
    )
    native.genrule(
        name = name + "_gen",
        srcs = [src, ":" + name + "_srcs"],
        outs = outs,
        cmd = " ".join([
            PROTOC,
            "-I" + (_ROOT if _ROOT else "."),
            "--cpp_out=" + out_dir,
            plugin_flags,
            "$(location " + src + ")",
        ]),
    )
    native.cc_library(
        name = name,
        srcs = [o for o in outs if o.endswith(".cc")],
        hdrs = [o for o in outs if o.endswith(".h")],
        deps = deps + ["//third_party/system:protobuf"] +
               (["//third_party/system:grpc"] if grpc else []),
        visibility = visibility,
    )
