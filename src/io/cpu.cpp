// bf16emu io: CPU model listing. See cpu.hpp.
#include "io/cpu.hpp"

#include <cstdio>
#include <string>

#include <bf16emu/cpu.hpp>

namespace bf16emu::io {

namespace {
std::string k_name(const cpu::model_info &m) { return m.k == 0 ? "2n" : std::to_string(m.k); }
} // namespace

void print_cpu_models() {
  for (const cpu::model_info &m : cpu::models)
    std::printf("%-16s k=%-4s %-16s %s\n", m.name, k_name(m).c_str(), m.isa, m.description);
}

void write_cpu_models(json_writer &w) {
  for (const cpu::model_info &m : cpu::models)
    w.begin_object()
        .kv("arch", m.name)
        .kv("family", "cpu")
        .kv("isa", m.isa)
        .kv("k", k_name(m))
        .kv("a_format", "bf16")
        .kv("out", "fp32")
        .kv("description", m.description)
        .end_object();
}

} // namespace bf16emu::io
