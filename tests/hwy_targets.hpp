// Runs a test body once per SIMD target that Highway compiled and this CPU supports, forcing it
// (hwy::SetSupportedTargetsForTest), for the libraries with run-time dispatch (src/bulk,
// src/tc_lanes). chosen_name() is the library's own name of the target it dispatches to, which
// must be the forced one.
#pragma once

#include <gtest/gtest.h>

#include <hwy/targets.h>

#include <cstdint>
#include <string>
#include <vector>

namespace bf16emu_test {

template <class Name, class Fn> void for_each_hwy_target(Name &&chosen_name, Fn &&body) {
  const std::vector<std::int64_t> targets = hwy::SupportedAndGeneratedTargets();
  ASSERT_FALSE(targets.empty());
  for (const std::int64_t t : targets) {
    hwy::SetSupportedTargetsForTest(t);
    const std::string name = hwy::TargetName(t);
    ASSERT_EQ(name, chosen_name());
    SCOPED_TRACE("target " + name);
    body();
  }
  hwy::SetSupportedTargetsForTest(0);
}

} // namespace bf16emu_test
