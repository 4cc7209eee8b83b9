// Unicode White_Space trimming for the contract's text rules (private to vtrace_runtime).
//
// Upstream trims with Rust's str::trim, which strips every Unicode White_Space code point, not
// only ASCII spaces: a failure message of only U+00A0 or U+3000 is blank there (spec 1.5), and
// parse_runtime_value accepts " portable\u3000" (spec 5.1).
// Errors: none; bytes that are not valid UTF-8 are never white space.
#pragma once

#include <string_view>

namespace vtrace::runtime::text {

// `text` without its leading and trailing White_Space code points (UTF-8): U+0009..U+000D,
// U+0020, U+0085, U+00A0, U+1680, U+2000..U+200A, U+2028, U+2029, U+202F, U+205F, U+3000.
std::string_view trim_white_space(std::string_view text);

}  // namespace vtrace::runtime::text
