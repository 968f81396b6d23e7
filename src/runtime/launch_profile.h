// launch_profile.h - KDSL_PROFILE=1: the time of each kernel's launches, printed when the process exits
#pragma once
#include <string>
#include <string_view>

namespace kdsl::detail {

// Whether launches are being timed: set from KDSL_PROFILE (anything but empty or "0") when
// first asked, so an ordinary run pays one predictable branch per launch.
bool launch_profile_enabled();
void set_launch_profile_enabled(bool on);  // for tests

// Adds one launch of `kernel` that took `us` microseconds: wall time for a host launch (it is
// synchronous: from the call to the return of its last program), CUDA events around a GPU
// launch, which runs as it would unprofiled (its time is read at the next wait).
void record_launch(std::string_view kernel, double us);
// The row of a GPU's idle time between one launch's end and the next one's start, waits for
// the host included (what a CUDA graph or fewer launches would save).
inline constexpr std::string_view kIdleBetweenLaunches = "(device idle between launches)";

// The launches recorded so far as a table, largest total time first (empty if none), and
// forgets them. What is left at exit is printed to stderr.
std::string take_launch_profile();

}  // namespace kdsl::detail
