// bf16emu io: registry of `bf16emu paper` sections. See paper_sections.hpp.
#include "io/paper_sections.hpp"

namespace bf16emu::io {

std::vector<paper_section> &paper_sections() {
  static std::vector<paper_section> sections;
  return sections;
}

} // namespace bf16emu::io
