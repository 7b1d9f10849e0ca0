// stmatrix / ldmatrix as plain warp shuffles and shared-memory accesses, as an AST pass.
//
// `stmatrix.sync.aligned.m8n8.xN.shared.b16 [a], {r0..r(N-1)}` (Triton's layout conversions into
// shared memory on sm_90) stores N 8x8 matrices of 16-bit elements: row i of matrix j starts at the
// address lane 8j+i holds, and lane t's register rj is the 32-bit word (t%4) of row t/4 of matrix j.
// `ldmatrix` (no .trans) is the inverse load. Since every 32-bit word stays whole, each becomes, per
// matrix j: `shfl.sync.idx` of the address from lane 8j + laneid/4, plus 4·(laneid%4), then one
// `st.shared.b32` / `ld.shared.b32` of rj: exact for any element type, fp32 included. Forms not
// covered (.trans, which splits words into halves; a 64-bit or non-register address) stay as they are
// and the executor refuses them naming the instruction.
#pragma once

#include "ptx/ast.h"

namespace dirigo::ptx {

// Rewrites the covered stmatrix/ldmatrix instructions of f; returns how many were rewritten.
// Generated instructions keep the original's SourceLoc; labels are renumbered.
int lower_matrix_moves(Function& f);

}  // namespace dirigo::ptx
