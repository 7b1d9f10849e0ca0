// What the text and HTML reports share: where two printed values differ, and the HTML page.
#pragma once

#include <string>
#include <string_view>
#include <utility>

#include "check/check.h"

namespace dirigo::check {

// Both strings with the tokens outside a longest common subsequence of their tokens (numbers and
// names are one token each) wrapped in open ... close: the part where two printed values differ.
// The wrapped text is escaped by `escape` (identity by default), the markers are not.
std::pair<std::string, std::string> mark_differences(const std::string& a, const std::string& b, std::string_view open,
                                                     std::string_view close,
                                                     std::string (*escape)(std::string_view) = nullptr);

// One self-contained HTML page: the verdict, a picture of the output tensors' locations (checked
// equal / differs / undecided / not reached), the two values and the witness, and per-stage times.
std::string to_html(const Report& r);

}  // namespace dirigo::check
