// Which front end a message is for: the command line (--beta) or Python (argument 'beta').
#pragma once

namespace bf16emu::io {

enum class front_end { cli, python };

} // namespace bf16emu::io
