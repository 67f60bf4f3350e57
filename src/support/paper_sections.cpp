// bf16emu support: registry of `bf16emu paper` sections. See paper_sections.hpp.
#include "support/paper_sections.hpp"

namespace bf16emu::support {

std::vector<paper_section> &paper_sections() {
  static std::vector<paper_section> sections;
  return sections;
}

} // namespace bf16emu::support
