// SPDX-License-Identifier: Apache-2.0
// kernels/generic/fused_attention_undef.h: forgets the parameters of one instantiation of
// fused_attention_impl.h, so that the next one can define them again.
#undef CMLC_FA_T
#undef CMLC_FA_V
#undef CMLC_FA_W
#undef CMLC_FA_EXP
#undef CMLC_FA_LOAD
#undef CMLC_FA_STORE
#undef CMLC_FA_NAME
#undef CMLC_FA_LINKAGE
#undef CMLC_FA_ATTR
#undef CMLC_FA_IV
#undef CMLC_FA_VEXP
#undef CMLC_FA_NATIVE
#undef CMLC_FA_F16_ROW
