/* Glue for bench_anchors.cpp: CPFloat (north-numerical-computing/cpfloat, LGPL-2.1) is C that
 * C++ does not compile (implicit void* conversions), so this one C file includes it from the
 * checkout named by BF16EMU_CPFLOAT_DIR and exposes a bfloat16 nearest-even rounding of a
 * float array. No CPFloat code is in this repository. */
#include <stddef.h>

#include "cpfloat_binary32.h"

#include "anchor_cpfloat.h"

void *bf16emu_anchor_cpfloat_bf16_rne(void) {
  optstruct *o = init_optstruct();
  if (o == NULL) return NULL;
  o->format[0] = '\0';
  o->precision = 8; /* bfloat16: 7 fraction bits + 1 */
  o->emin = -126;
  o->emax = 127;
  o->explim = CPFLOAT_EXPRANGE_TARG;
  o->infinity = CPFLOAT_INF_USE;
  o->round = CPFLOAT_RND_NE;
  o->saturation = CPFLOAT_SAT_NO;
  o->subnormal = CPFLOAT_SUBN_USE;
  o->flip = CPFLOAT_SOFTERR_NO;
  o->p = 0;
  if (cpfloat_validate_optstructf(o) != 0) {
    free_optstruct(o);
    return NULL;
  }
  return o;
}

int bf16emu_anchor_cpfloat_round(float *out, const float *in, size_t n, void *opts) {
  return cpfloatf(out, in, n, (optstruct *)opts);
}

void bf16emu_anchor_cpfloat_free(void *opts) { free_optstruct((optstruct *)opts); }
