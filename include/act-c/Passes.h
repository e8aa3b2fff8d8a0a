/*===-- act-c/Passes.h - act's passes on a module, in process ------------===*\
|*                                                                            *|
|* What `act-opt INPUT --pass-pipeline=... -o OUTPUT` does, without a         *|
|* process: act.compile and act.Module insert encodings, write the memory     *|
|* report and derive forward-only steps through it (python/act/driver.py).    *|
|* Same conventions as act-c/Step.h: a non-zero status and a message the      *|
|* caller frees with actStringFree on failure, never an abort.                *|
|*                                                                            *|
\*===----------------------------------------------------------------------===*/

#ifndef ACT_C_PASSES_H
#define ACT_C_PASSES_H

#include "act-c/Step.h"

#ifdef __cplusplus
extern "C" {
#endif

/// Parses the module in the file `input`, runs `pipeline` on it (passes as
/// act-opt names them, comma-separated, options in braces:
/// "act-insert-encode-decode{encoding=\"#act.quant<bits = 4>\"}"; nested
/// implicitly, as act-opt's flags are) and writes the result to the file
/// `output` (NULL or "": not written). 0 on success; otherwise non-zero and
/// `error` holds the diagnostics, with their locations.
ACT_CAPI_EXPORTED int actRunPasses(const char *input, const char *pipeline,
                                   const char *output, char **error);

#ifdef __cplusplus
}
#endif

#endif /* ACT_C_PASSES_H */
