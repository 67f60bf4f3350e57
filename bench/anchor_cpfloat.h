// The C glue around CPFloat (anchor_cpfloat.c) as bench_anchors.cpp sees it.
#pragma once
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif
// Options for bfloat16 (precision 8, exponents -126..127), round to nearest even, subnormals
// kept, infinities kept, no saturation, no bit flips; NULL if CPFloat rejects them.
void *bf16emu_anchor_cpfloat_bf16_rne(void);
// out[i] = in[i] rounded to bfloat16, stored as float; CPFloat's return value.
int bf16emu_anchor_cpfloat_round(float *out, const float *in, size_t n, void *opts);
void bf16emu_anchor_cpfloat_free(void *opts);
#ifdef __cplusplus
}
#endif
