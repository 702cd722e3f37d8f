/*
** cjk_api.h — what the shared library exports.
**
** Everything is compiled with -fvisibility=hidden; CJK_API marks the few
** functions other objects call: the SQLite entry point, and the helpers the
** cffi module (python/build_cffi.py) declares, which it reaches by linking to
** the plain library instead of carrying its own copy of the code.
*/
#ifndef CJK_API_H
#define CJK_API_H

#if defined(_WIN32)
#define CJK_API __declspec(dllexport)
#else
#define CJK_API __attribute__((visibility("default")))
#endif

/* The few helpers the per-character loops call, defined in headers: a
** compiler left to itself may keep them calls (at -Os it does). */
#if defined(__GNUC__) || defined(__clang__)
#define CJK_INLINE static inline __attribute__((always_inline))
#else
#define CJK_INLINE static inline
#endif

#endif /* CJK_API_H */
