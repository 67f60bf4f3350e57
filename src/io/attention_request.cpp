#include "io/attention_request.hpp"

#include <climits>
#include <utility>

#include "io/attention.hpp"
#include "io/error.hpp"

namespace bf16emu::io {

namespace {

// Each option's two spellings: the CLI's flag and the Python keyword.
struct spelling {
  at::option o;
  const char *cli, *python;
};
constexpr spelling spellings[] = {
    {at::option::policy, "--policy", "policy"},
    {at::option::variant, "--variant", "variant"},
    {at::option::beta, "--beta", "beta"},
    {at::option::tie_tol, "--tie-tol", "tie_tol"},
    {at::option::block_m, "--block-m", "block_m"},
    {at::option::block_n, "--block-n", "block_n"},
    {at::option::sites, "--site-precision", "sites"},
    {at::option::scale, "--scale", "scale"},
    {at::option::backward, "--bwd", "backward"},
    {at::option::bwd_block_m, "--bwd-block-m", "bwd_block_m"},
    {at::option::bwd_block_n, "--bwd-block-n", "bwd_block_n"},
};

// A block size as the policy holds it (int); one outside int's range gets the rule's own error.
int block_int(at::option o, long v, front_end fe) {
  if (v < INT_MIN || v > INT_MAX)
    if (const auto e = at::block_size_error(o, v, false)) throw input_error(option_message(*e, fe));
  return int(v);
}

} // namespace

std::string option_name(at::option o, front_end fe) {
  for (const spelling &s : spellings)
    if (s.o == o) return fe == front_end::cli ? s.cli : std::string("argument '") + s.python + "'";
  return "?";
}

std::string option_message(const at::option_error &e, front_end fe) {
  std::string reason = e.reason;
  if (e.other)
    if (const auto at = reason.find("{}"); at != std::string::npos)
      reason.replace(at, 2, option_name(*e.other, fe));
  return option_name(e.arg, fe) + " " + reason;
}

at::run_options make_attention_options(const attention_request &rq, front_end fe) {
  const auto name = [fe](at::option o) { return option_name(o, fe); };
  at::run_options opt;
  at::kernel_policy &p = opt.cfg.pol;
  p = parse_policy_name(rq.policy, name(at::option::policy).c_str(), true);
  opt.cfg.var = parse_variant(rq.variant, name(at::option::variant).c_str());
  if (rq.block_m) p.block_m = block_int(at::option::block_m, rq.block_m, fe);
  if (rq.block_n) p.block_n = block_int(at::option::block_n, rq.block_n, fe);
  if (!rq.kv_order.empty()) p.kv = parse_kv_order(rq.kv_order);
  if (!rq.exp.empty()) p.exp = parse_exp_impl(rq.exp);
  if (!rq.row_sum.empty()) p.sum_order = parse_row_sum(rq.row_sum);
  if (!rq.fma.empty()) p.fma_contract = parse_on_off(rq.fma, "--fma");
  if (!rq.normalize.empty()) p.normalize = parse_normalize(rq.normalize);
  parse_site_precision(rq.sites, p, name(at::option::sites).c_str());
  p.beta = rq.beta;
  p.tie_tol = rq.tie_tol;
  p.softmax_scale = rq.scale;
  opt.cfg.causal = rq.causal;
  at::backward_config &b = opt.bwd;
  b.kind = parse_backward_kind(rq.bwd, name(at::option::backward).c_str());
  if (b.kind != at::backward_kind::tiled) { // the tiled backward's own settings need it
    for (const auto &[v, o] :
         {std::pair{rq.bwd_block_m, at::option::bwd_block_m}, {rq.bwd_block_n, at::option::bwd_block_n}})
      if (v)
        throw input_error(option_message(
            {o, "is a setting of the tiled backward: it needs {} tiled", at::option::backward}, fe));
    for (const auto &[given, flag] :
         {std::pair{&rq.delta, "--delta"}, {&rq.dq_order, "--dq-order"}, {&rq.bwd_q_order, "--bwd-q-order"}})
      if (!given->empty())
        throw input_error(std::string(flag) + " is a setting of the tiled backward: it needs --bwd tiled");
  }
  if (rq.bwd_block_m) b.block_m = block_int(at::option::bwd_block_m, rq.bwd_block_m, fe);
  if (rq.bwd_block_n) b.block_n = block_int(at::option::bwd_block_n, rq.bwd_block_n, fe);
  if (!rq.delta.empty()) b.delta = parse_delta_order(rq.delta);
  if (!rq.dq_order.empty()) b.dq_order = parse_block_order(rq.dq_order, "--dq-order");
  if (!rq.bwd_q_order.empty()) b.q_order = parse_block_order(rq.bwd_q_order, "--bwd-q-order");
  if (const auto e = at::run_options_error(opt)) throw input_error(option_message(*e, fe));
  opt.backward = rq.backward || b.kind != at::backward_kind::reference;
  opt.with_ledger = rq.ledger;
  opt.with_reference = rq.reference;
  opt.threads = rq.threads;
  return opt;
}

std::string modelled_backward(attention_request rq, front_end fe) {
  attention_request fwd = rq;
  fwd.bwd = "reference", fwd.bwd_block_m = fwd.bwd_block_n = 0; // the forward's own errors first
  at::run_options opt = make_attention_options(fwd, fe);
  opt.bwd.kind = at::backward_kind::tiled;
  const auto e = at::run_options_error(opt);
  rq.bwd = e && e->arg == at::option::backward ? "reference" : "tiled";
  (void)make_attention_options(rq, fe); // then the chosen backward's (its block sizes)
  return rq.bwd;
}

} // namespace bf16emu::io
