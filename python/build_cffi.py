"""cffi (API mode, out of line) definition of cjk_tokenizer._cjk_unicode61.

The module exposes to Python the one definition of CJK, width folding, the
snippet window and the version.  python/cjk_build.py generates its C wrapper
from ``ffibuilder`` and links it to the plain library, which exports every
function CDEF declares (``CJK_API`` in csrc/cjk_api.h): the C code ships once.
Constants (the gap token) are compiled into the wrapper from the headers, so
they need no export.
"""
import cffi

CDEF = """
int cjk_is_cjk(unsigned int cp);
unsigned int cjk_fold_width(unsigned int cp);
int cjk_fold_utf8(const char *zIn, int n, char *zOut, int nOut, int bVariants);
int cjk_variant_count(void);
unsigned int cjk_variant_pair(int i, int bTo);
int cjk_range_count(void);
unsigned int cjk_range_bound(int i, int bHigh);
int cjk_check_args(const char **azArg, int nArg, char *zErr, int nErr);
int cjk_classify_utf32(const uint32_t *aCp, int n, unsigned char *aOut);
const char *cjk_version(void);
int cjk_is_extender(unsigned int cp);
size_t cjk_snippet_work_size(int nMatch, int nPhrase, int nMax, int nChar);
int cjk_snippet_window(const char *z, int n, int nChar, const int *aMatch, int nMatch, int nPhrase,
                       int nMax, void *pWork, size_t nWork, int *aOut);
static const char *const CJK_GAP_TOKEN;
"""

ffibuilder = cffi.FFI()
ffibuilder.cdef(CDEF)
ffibuilder.set_source(
    "cjk_tokenizer._cjk_unicode61",
    '#include "cjk_chars.h"\n#include "cjk_snippet.h"\n#include "cjk_tokenizer.h"\n#include "cjk_variants.h"\n#include "cjk_version.h"\n',
)
