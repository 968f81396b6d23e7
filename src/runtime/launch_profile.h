// launch_profile.h - KDSL_PROFILE=1: the wall time of host launches per kernel, printed when the process exits
#pragma once
#include <string>
#include <string_view>

namespace kdsl::detail {

// Whether launches are being timed: set from KDSL_PROFILE (anything but empty or "0") when
// first asked, so an ordinary run pays one predictable branch per launch.
bool launch_profile_enabled();
void set_launch_profile_enabled(bool on);  // for tests

// Adds one launch of `kernel` that took `us` microseconds of wall time (a host launch is
// synchronous: from the call to the return of its last program).
void record_launch(std::string_view kernel, double us);

// The launches recorded so far as a table, largest total time first (empty if none), and
// forgets them. What is left at exit is printed to stderr.
std::string take_launch_profile();

}  // namespace kdsl::detail
