// NUCLEUS_DISPATCH_TOKENS(kernel, args...): `return kernel<N>(args...)` for N = n_tokens (a variable
// in scope, 1 ≤ n_tokens ≤ kDotTokens = 8; more counts as 8), so a kernel templated on its token
// count is instantiated once per count and chosen at run time. Used inside functions that carry a
// target attribute, which a lambda would not inherit — hence a macro.
// NUCLEUS_DISPATCH_TOKENS_6: the same for kernels of at most 6 tokens (the packed F16/BF16 tiles,
// kernels/packed_f16.h): more counts as 6.
#pragma once

// The cases both share: 1 to 5 tokens.
#define NUCLEUS_DISPATCH_TOKENS_1_TO_5(kernel, ...) \
  case 1: return kernel<1>(__VA_ARGS__);            \
  case 2: return kernel<2>(__VA_ARGS__);            \
  case 3: return kernel<3>(__VA_ARGS__);            \
  case 4: return kernel<4>(__VA_ARGS__);            \
  case 5: return kernel<5>(__VA_ARGS__);

#define NUCLEUS_DISPATCH_TOKENS(kernel, ...)                \
  switch (n_tokens) {                                       \
    NUCLEUS_DISPATCH_TOKENS_1_TO_5(kernel, __VA_ARGS__)     \
    case 6: return kernel<6>(__VA_ARGS__);                  \
    case 7: return kernel<7>(__VA_ARGS__);                  \
    default: return kernel<8>(__VA_ARGS__);                 \
  }

#define NUCLEUS_DISPATCH_TOKENS_6(kernel, ...)              \
  switch (n_tokens) {                                       \
    NUCLEUS_DISPATCH_TOKENS_1_TO_5(kernel, __VA_ARGS__)     \
    default: return kernel<6>(__VA_ARGS__);                 \
  }
