// bf16emu mpi: bias campaigns and attention head sweeps over the ranks of an MPI job
// and ablations (mpirun -np N bf16emu bias ..., srun bf16emu attention --heads H ...,
// mpirun bf16emu ablate ...). docs/scale.md.
//
// Rank r of N runs shard r of N of the work by the one rule of bf16emu::shard_size (the rule of
// bias --shard K/N; a run that is itself shard K/M gives rank r shard K + M*r of M*N), and the
// results are reduced to rank 0 exactly: the bias statistics as the exact text of the state
// file (io::bias_stats_text), merged exactly; the attention items' ledgers and output slices
// bit for bit, before the ledgers are merged in item order. So the output is byte-identical to
// a single-process run for any N. Only rank 0 gets a result (the others get nothing and print
// nothing); a failure on any rank prints "bf16emu: rank R of N: ..." and ends every rank
// (MPI_Abort, exit 2 for bad input, 1 otherwise), never a hang.
//
// Built only with BF16EMU_WITH_MPI (CMake, on when MPI is found); without it, and in a process
// not started by mpirun/srun (no OMPI_COMM_WORLD_SIZE, PMIX_RANK or PMI_SIZE in the
// environment), both calls are the plain single-process runs.
#pragma once

#include <optional>
#include <vector>

#include <bf16emu/attention/run.hpp>
#include <bf16emu/bias/stats.hpp>
#include <bf16emu/bias/sweep.hpp>

#include "io/ablate.hpp"

namespace bf16emu::mpi {

#if defined(BF16EMU_WITH_MPI)
// bias::run over the ranks; the statistics of spec's whole shard on rank 0, nullopt elsewhere.
std::optional<std::vector<bias::stats>> run_bias(const bias::run_spec &spec);
// attention::run_attention over the ranks (the (batch, head) items split); the report on rank
// 0, nullopt elsewhere.
std::optional<attention::run_report> run_attention(const attention::attention_inputs &in,
                                                   const attention::run_options &opt);
// io::run_ablation over the ranks (the heads split; every configuration's per-head values
// reduced to rank 0 bit for bit); the report on rank 0, nullopt elsewhere.
std::optional<io::ablation_report> run_ablation(const attention::attention_inputs &in,
                                                const io::ablation_request &rq);
#else
inline std::optional<std::vector<bias::stats>> run_bias(const bias::run_spec &spec) {
  return bias::run(spec);
}
inline std::optional<attention::run_report> run_attention(const attention::attention_inputs &in,
                                                          const attention::run_options &opt) {
  return attention::run_attention(in, opt);
}
inline std::optional<io::ablation_report> run_ablation(const attention::attention_inputs &in,
                                                       const io::ablation_request &rq) {
  return io::run_ablation(in, rq);
}
#endif

} // namespace bf16emu::mpi
