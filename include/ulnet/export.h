/* SPDX-License-Identifier: MIT */
/*
 * ulnet/export.h - the one export macro of libulnet's public ABI.
 *
 * libulnet is compiled with -fvisibility=hidden: a function or object is
 * exported from libulnet.so only when its declaration in a public header
 * (the headers of include/ulnet/) carries ULNET_API. Everything else in the library
 * (lnet_*, ksock_*, ul_*, srpc_*, ...) is internal and not part of the ABI;
 * tests/abi/test_abi_exports.sh fails the build's tests if anything else is
 * exported, or if a ULNET_API declaration is not.
 *
 * Every public header includes this one.
 */
#ifndef ULNET_EXPORT_H
#define ULNET_EXPORT_H

#if defined(__GNUC__) || defined(__clang__)
#define ULNET_API __attribute__((visibility("default")))
#else
#define ULNET_API
#endif

#endif /* ULNET_EXPORT_H */
