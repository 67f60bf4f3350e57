// bf16emu attention: the rules between the options of one run, written once.
//
// Every front end (the CLI, the Python module, bf16emu.torch) builds its run_options through
// src/io/attention_request.cpp, which calls run_options_error() and spells the option at fault
// its own way: --beta on the command line, argument 'beta' in Python. A new rule is one `if`
// here; no front end holds a copy.
#pragma once

#include <cmath>
#include <optional>
#include <string>

#include "bf16emu/attention/run.hpp"

namespace bf16emu::attention {

// The options a rule can name.
enum class option : std::uint8_t {
  policy,
  variant,
  beta,
  tie_tol,
  block_m,
  block_n,
  sites,
  scale,
  backward,
  bwd_block_m,
  bwd_block_n,
};

// A broken rule: the option at fault and why, as a phrase that follows the option's name
// ("must be a finite number > 1 ..."). `other` is the second option of a rule between two;
// "{}" in `reason` stands for its name.
struct option_error {
  option arg;
  std::string reason;
  std::optional<option> other;
};

// Largest block size (Br, Bc) accepted anywhere: a tile of 2^20 x 2^20 is far past any kernel.
inline constexpr long max_block = 1L << 20;

// A block size (Br or Bc, forward or backward): 1..max_block, and a multiple of 16 where its
// keys are tensor-core k chunks.
inline std::optional<option_error> block_size_error(option arg, long v, bool k_chunks) {
  if (v < 1 || v > max_block)
    return option_error{arg, "must be in 1..2^20 (got " + std::to_string(v) + ")", {}};
  if (k_chunks && v % 16)
    return option_error{arg,
                        "must be a multiple of 16 under fa2 policies (tensor-core k chunks; got " +
                            std::to_string(v) + ")",
                        {}};
  return std::nullopt;
}

// The rules of the forward: Algorithm 1's beta > 1 and tie tolerance >= 0 (beta = 1 gives
// m = r_m, exactly the unstabilized kernel), the block sizes, the softmax scale (0: 1/sqrt(d)).
// Key blocks are tensor-core k chunks under fa2 policies, except in the standard variant, which
// takes whole rows.
inline std::optional<option_error> forward_config_error(const forward_config &c) {
  const kernel_policy &p = c.pol;
  if (!(p.beta > 1) || !std::isfinite(p.beta))
    return option_error{
        option::beta,
        "must be a finite number > 1 (Algorithm 1 of the paper requires beta > 1; beta = 1 is "
        "the unstabilized kernel)",
        {}};
  if (!(p.tie_tol >= 0) || !std::isfinite(p.tie_tol))
    return option_error{option::tie_tol, "must be a finite number >= 0", {}};
  if (auto e = block_size_error(option::block_m, p.block_m, false)) return e;
  const bool k_chunks = p.kind == policy_kind::fa2 && c.var != variant::standard;
  if (auto e = block_size_error(option::block_n, p.block_n, k_chunks)) return e;
  if (!(p.softmax_scale >= 0) || !std::isfinite(p.softmax_scale))
    return option_error{option::scale, "must be a positive finite number (0 or none: 1/sqrt(dim))", {}};
  return std::nullopt;
}

// Every rule of a run: the forward's, then the backward's (checked whether or not o.backward is
// set, as a front end asks before it knows whether a gradient will be wanted).
inline std::optional<option_error> run_options_error(const run_options &o) {
  if (auto e = forward_config_error(o.cfg)) return e;
  const kernel_policy &p = o.cfg.pol;
  if (const char *e = backward_policy_error(o.bwd.kind, p)) return option_error{option::backward, e, {}};
  if (o.bwd.kind != backward_kind::tiled) return std::nullopt;
  if (has_site_override(p))
    return option_error{option::backward,
                        "tiled does not model site overrides ({}); use the reference backward",
                        option::sites};
  if (p.kind == policy_kind::paper && p.paper_arith == paper_dtypes::autocast)
    return option_error{option::backward,
                        "tiled does not model paper:autocast ({}); use the reference backward",
                        option::policy};
  const bool fa2 = p.kind == policy_kind::fa2;
  if (auto e = block_size_error(option::bwd_block_m, o.bwd.block_m, fa2)) return e;
  return block_size_error(option::bwd_block_n, o.bwd.block_n, fa2);
}

} // namespace bf16emu::attention
