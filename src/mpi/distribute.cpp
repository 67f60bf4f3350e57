// bf16emu mpi: see distribute.hpp.
#include "mpi/distribute.hpp"

#include <mpi.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <sstream>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "io/bias_state.hpp"
#include "io/error.hpp"

namespace bf16emu::mpi {
namespace {

struct world {
  int rank = 0, size = 1;
};

// Whether mpirun or srun started this process as a rank of an MPI job.
bool launched() {
  for (const char *v : {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_SIZE"})
    if (std::getenv(v)) return true;
  return false;
}

void finalize() {
  int done = 0;
  MPI_Finalized(&done);
  if (!done) MPI_Finalize();
}

// MPI_COMM_WORLD, initialized on first use (finalized at exit); rank 0 of 1 when this process
// is not a rank of an MPI job.
world join() {
  if (!launched()) return {};
  int up = 0;
  MPI_Initialized(&up);
  if (!up) {
    MPI_Init(nullptr, nullptr);
    std::atexit(finalize);
  }
  world w;
  MPI_Comm_rank(MPI_COMM_WORLD, &w.rank);
  MPI_Comm_size(MPI_COMM_WORLD, &w.size);
  return w;
}

// Runs fn; an exception ends every rank with a message naming this one. Exit status 2 for bad
// input (io::input_error, std::invalid_argument), 1 otherwise.
template <class Fn> auto guarded(const world &w, Fn &&fn) -> decltype(fn()) {
  try {
    return fn();
  } catch (const std::exception &e) {
    const bool input =
        dynamic_cast<const io::input_error *>(&e) || dynamic_cast<const std::invalid_argument *>(&e);
    std::fprintf(stderr, "bf16emu: rank %d of %d: %s%s; ending the run on every rank\n", w.rank, w.size,
                 input ? "" : "error: ", e.what());
    std::fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, input ? 2 : 1);
    std::abort(); // MPI_Abort does not return
  }
}

// Failure injection for the tests (tests/mpi): BF16EMU_MPI_FAIL_RANK=R makes rank R fail after
// its share of the work, before the reduction.
void injected_failure(const world &w) {
  const char *v = std::getenv("BF16EMU_MPI_FAIL_RANK");
  if (v && std::to_string(w.rank) == v)
    throw std::runtime_error("failure injected by BF16EMU_MPI_FAIL_RANK=" + std::string(v));
}

// MPI counts are int: larger buffers go in pieces.
constexpr std::uint64_t piece = std::uint64_t{1} << 28;

void send_text(const std::string &s, int to) {
  const std::uint64_t n = s.size();
  MPI_Send(&n, 1, MPI_UINT64_T, to, 0, MPI_COMM_WORLD);
  for (std::uint64_t at = 0; at < n; at += piece)
    MPI_Send(s.data() + at, int(std::min(piece, n - at)), MPI_CHAR, to, 0, MPI_COMM_WORLD);
}

std::string receive_text(int from) {
  std::uint64_t n = 0;
  MPI_Recv(&n, 1, MPI_UINT64_T, from, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  std::string s(n, '\0');
  for (std::uint64_t at = 0; at < n; at += piece)
    MPI_Recv(s.data() + at, int(std::min(piece, n - at)), MPI_CHAR, from, 0, MPI_COMM_WORLD,
             MPI_STATUS_IGNORE);
  return s;
}

// words 64-bit words at p: on rank 0, the bitwise OR over the ranks. Every item is computed by
// one rank and left all-zero bits (+0.0, count 0) by the others, so the OR is that rank's bits.
void or_to_root(const world &w, void *p, std::uint64_t words) {
  auto *b = static_cast<std::uint64_t *>(p);
  for (std::uint64_t at = 0; at < words; at += piece) {
    const int n = int(std::min(piece, words - at));
    if (w.rank == 0)
      MPI_Reduce(MPI_IN_PLACE, b + at, n, MPI_UINT64_T, MPI_BOR, 0, MPI_COMM_WORLD);
    else
      MPI_Reduce(b + at, nullptr, n, MPI_UINT64_T, MPI_BOR, 0, MPI_COMM_WORLD);
  }
}

void or_to_root(const world &w, std::vector<double> &v) {
  static_assert(sizeof(double) == sizeof(std::uint64_t));
  or_to_root(w, v.data(), v.size());
}

} // namespace

std::optional<std::vector<bias::stats>> run_bias(const bias::run_spec &spec) {
  const world w = join();
  if (w.size == 1) return bias::run(spec);
  return guarded(w, [&]() -> std::optional<std::vector<bias::stats>> {
    bias::run_spec mine = spec;
    mine.shard = spec.shard + spec.shards * std::uint64_t(w.rank);
    mine.shards = spec.shards * std::uint64_t(w.size);
    if (w.rank != 0) mine.progress = nullptr;
    std::vector<bias::stats> st = bias::run(mine);
    injected_failure(w);
    if (w.rank != 0) {
      std::string text;
      for (const bias::stats &s : st)
        text += io::bias_stats_text(s) + "\n";
      send_text(text, 0);
      return std::nullopt;
    }
    for (int r = 1; r < w.size; ++r) {
      std::istringstream in(receive_text(r));
      std::string line;
      for (bias::stats &total : st) {
        bias::stats part;
        if (!std::getline(in, line))
          throw std::runtime_error("rank " + std::to_string(r) + " sent too few statistics");
        const std::string err = io::parse_bias_stats(line, part);
        if (!err.empty()) throw std::runtime_error("statistics from rank " + std::to_string(r) + ": " + err);
        total.merge(part);
      }
    }
    return st;
  });
}

std::optional<attention::run_report> run_attention(const attention::attention_inputs &in,
                                                   const attention::run_options &opt) {
  const world w = join();
  if (w.size == 1) return attention::run_attention(in, opt);
  static_assert(std::is_trivially_copyable_v<attention::ledger> && sizeof(attention::ledger) % 8 == 0);
  return guarded(w, [&]() -> std::optional<attention::run_report> {
    // The OR reduction needs an empty ledger to be all-zero bits (as its counters and sums are).
    static const bool empty_is_zero = [] {
      const attention::ledger empty{};
      unsigned char bytes[sizeof empty];
      std::memcpy(bytes, &empty, sizeof empty);
      return std::all_of(bytes, bytes + sizeof bytes, [](unsigned char b) { return b == 0; });
    }();
    if (!empty_is_zero) throw std::logic_error("mpi: an empty attention::ledger is not all-zero bits");
    attention::run_options mine = opt;
    mine.part = std::uint64_t(w.rank);
    mine.parts = std::uint64_t(w.size);
    if (w.rank != 0) mine.progress = nullptr;
    // Every per-item result of run_report: the ledgers and the slices of these vectors.
    mine.exchange = [&w](std::vector<attention::ledger> &items, attention::run_report &rep) {
      injected_failure(w);
      or_to_root(w, items.data(), items.size() * (sizeof(attention::ledger) / 8));
      for (std::vector<double> *v : {&rep.o, &rep.lse, &rep.o_exact, &rep.delta, &rep.delta_exact, &rep.dq,
                                     &rep.dk, &rep.dv, &rep.dq_exact, &rep.dk_exact, &rep.dv_exact})
        or_to_root(w, *v);
    };
    attention::run_report rep = attention::run_attention(in, mine);
    if (w.rank != 0) return std::nullopt;
    rep.opt.part = 0, rep.opt.parts = 1, rep.opt.exchange = nullptr;
    return rep;
  });
}

std::optional<io::ablation_report> run_ablation(const attention::attention_inputs &in,
                                                const io::ablation_request &rq) {
  const world w = join();
  if (w.size == 1) return io::run_ablation(in, rq);
  return guarded(w, [&]() -> std::optional<io::ablation_report> {
    io::ablation_request mine = rq;
    mine.split.part = std::uint64_t(w.rank);
    mine.split.parts = std::uint64_t(w.size);
    if (w.rank != 0) mine.progress = nullptr;
    // A head's values are written by one rank and 0 on the others: OR gives that rank's bits.
    mine.split.exchange = [&w](std::vector<double> &per_head) {
      injected_failure(w);
      or_to_root(w, per_head);
    };
    io::ablation_report rep = io::run_ablation(in, mine);
    if (w.rank != 0) return std::nullopt;
    rep.rq.split = {};
    return rep;
  });
}

} // namespace bf16emu::mpi
