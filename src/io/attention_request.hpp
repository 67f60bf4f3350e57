// The one request of an attention run: every front end (the CLI's attention and ablate, the
// Python module, bf16emu.torch through it) fills an attention_request with what it was given,
// by name, and make_attention_options() turns it into run_options: names through the one table
// (io/attention.hpp), then every rule between options (attention::run_options_error). Errors
// are io::input_error naming the option the way the front end spells it.
#pragma once

#include <string>

#include <bf16emu/attention/rules.hpp>

#include "io/front_end.hpp"

namespace bf16emu::io {

namespace at = bf16emu::attention;

// The option as `fe` spells it: "--beta", "argument 'beta'".
std::string option_name(at::option o, front_end fe);
// The broken rule as a message in `fe`'s words.
std::string option_message(const at::option_error &e, front_end fe);

struct attention_request {
  std::string policy = "fa2:sm80", variant = "fa2";
  double beta = 2.0, tie_tol = 1e-3;
  long block_m = 0, block_n = 0; // 0: the policy's
  // The policy's arithmetic choices (the CLI's --kv-order ...); empty: the policy's.
  std::string kv_order, exp, row_sum, fma, normalize;
  std::string sites; // the --site-precision spec, "row_sum=fp32,pv=exact"
  double scale = 0;  // softmax scale; 0: 1/sqrt(d)
  bool causal = false;
  // The backward's kind and its tiled settings; `backward` whether to run it.
  bool backward = false;
  std::string bwd = "reference";
  long bwd_block_m = 0, bwd_block_n = 0; // 0: the tiled backward's default (128)
  std::string delta, dq_order, bwd_q_order;
  bool ledger = true, reference = true;
  unsigned threads = 0;
};

// The run's options, or io::input_error in `fe`'s words. A backward kind other than
// "reference" implies a backward (the CLI's --bwd tiled).
at::run_options make_attention_options(const attention_request &rq, front_end fe);

// The backward that bf16emu.torch takes when none is named: "tiled" where the rules allow it for
// this request, else "reference".
std::string modelled_backward(attention_request rq, front_end fe);

} // namespace bf16emu::io
