#!/bin/sh
# rustdoc that checks the error code of a `compile_fail,E0XXX` doctest. Stable rustdoc parses the code but
# only compares it on a nightly build (measured on 1.95: `compile_fail,E0001` passes on stable), so a
# doctest that stops compiling for another reason (a renamed import) would still pass as "compile fail".
# RUSTC_BOOTSTRAP=1 turns that comparison on for rustdoc and the doctests it compiles; it changes nothing
# else (the library is built by cargo's rustc, without it). scripts/test.sh sets RUSTDOC to this file.
RUSTC_BOOTSTRAP=1 exec rustdoc "$@"
