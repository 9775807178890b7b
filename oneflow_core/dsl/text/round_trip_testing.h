// Test helpers for the graph text format: parsing that must succeed, and the round-trip
// check every printable graph must pass.
#ifndef ONEFLOW_CORE_DSL_TEXT_ROUND_TRIP_TESTING_H_
#define ONEFLOW_CORE_DSL_TEXT_ROUND_TRIP_TESTING_H_

#include <memory>
#include <string>

#include "oneflow_core/dsl/graph.h"

namespace oneflow {
namespace graph_text {

// Parses `text`, failing the current test (and returning an empty graph) on error.
std::unique_ptr<Graph> MustParse(const std::string& text);

// Checks that `original` (built without errors) prints as text that parses back to a
// graph printing the same text and building the same Job, source locations aside: a
// parsed graph's point at lines of the text, not at the C++ that built the original.
// The text with loc= fields (Graph::Locations::kPrint) must build the same Job exactly,
// locations included.
void ExpectRoundTrip(const Graph& original);

}  // namespace graph_text
}  // namespace oneflow

#endif  // ONEFLOW_CORE_DSL_TEXT_ROUND_TRIP_TESTING_H_
