// Inlining of `.func` calls into their callers, as a pass over the AST.
//
// nvcc passes arguments through `.param` scratch variables declared in the caller's call
// sequence:   st.param.b32 [param0], %r6;  call.uni (retval0), f, (param0);  ld.param.f32 %f3, [retval0];
// Inlining replaces the `call` with f's body in which
//   - f's parameters are renamed to the caller's argument variables (`param0$1`), and f's
//     return parameter to the caller's return variable (`retval0$1`), so the st.param /
//     ld.param pairs on both sides now name the same caller-local .param variable
//     (Function::locals, space Param): parameter passing is explicit memory traffic;
//   - f's registers, labels and local variables get the suffix `$i<N>` (N counts the inlined
//     call sites of the caller), ranges `%r<42>` become `%r$i<N>_<42>`;
//   - `ret` becomes `bra.uni $Lret$i<N>` to a label after the inlined body.
// Callees are processed before callers, so nested calls disappear too. Calls to functions
// without a body (vprintf, __assertfail) stay as `call` instructions; the executor decides.
// Recursion (direct or mutual) is a ParseError at the call naming the cycle; an indirect call
// or an argument-count mismatch is a ParseError as well.
#pragma once

#include "ptx/ast.h"

namespace dirigo::ptx {

// Inlines every call to a function with a body into every function (entries and .funcs).
void inline_calls(Module& m);

}  // namespace dirigo::ptx
