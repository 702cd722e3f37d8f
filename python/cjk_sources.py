"""The C sources and compiler flags both artifacts are built with."""
import os
import sys

C_SOURCES = [
    "csrc/cjk_chars.c",
    "csrc/cjk_variants.c",
    "csrc/cjk_tokenizer.c",
    "csrc/cjk_aux.c",
    "csrc/cjk_extension.c",
]


def sanitize():
    return os.environ.get("CJK_SANITIZE", "") not in ("", "0")


def compile_args():
    if sys.platform == "win32":
        return []
    args = ["-std=c99", "-Wall", "-Wextra", "-fvisibility=hidden"]
    if sanitize():
        args += ["-O1", "-g", "-fno-omit-frame-pointer",
                 "-fsanitize=address,undefined", "-fno-sanitize-recover=undefined"]
    return args


def link_args():
    if sys.platform == "win32":
        return []
    return ["-fsanitize=address,undefined"] if sanitize() else []
