// Packed row-group kernels with AVX-512 VNNI: 16 rows per 512-bit register, one VPDPBUSD per
// 4 columns × 16 rows × 1 token (unsigned weights × signed activations, exact int32 sums).
#include <immintrin.h>

#include "kernels/packed_dot.h"
#include "kernels/packed_lanes_avx512.h"

#define NUCLEUS_AVX512 __attribute__((target("avx2,fma,f16c,avx512f,avx512vl,avx512bw,avx512vnni")))

namespace nucleus {

namespace {

// The 8 chunks of one block (columns 4c..4c+3 of all 16 rows, unsigned) into registers.
template <bool kQ4>
NUCLEUS_AVX512 inline void load_block(const uint8_t* qs, __m512i w[8]) {
  if constexpr (kQ4) {
    const __m512i low = _mm512_set1_epi8(0x0f);
    for (int c = 0; c < 4; ++c) {
      const __m512i v = _mm512_load_si512(qs + 64 * c);
      w[c] = _mm512_and_si512(v, low);
      w[c + 4] = _mm512_and_si512(_mm512_srli_epi16(v, 4), low);
    }
  } else {
    for (int c = 0; c < 8; ++c) w[c] = _mm512_load_si512(qs + 64 * c);
  }
}

// Calls block(b, qs, scales) for blocks b = 0..n_blocks-1 of a group (packed_rows.h) in order,
// walking the pairs with a pointer: computing each block's offset from b took ~10 scalar
// instructions a block in the one-token loops. With kPrefetch, each pair first prefetches its lines
// `ahead` bytes further on, half a pair before each of its blocks.
template <bool kQ4, bool kPrefetch, class Block>
NUCLEUS_AVX512 inline void for_each_block(const uint8_t* group, int64_t n_blocks, size_t ahead, Block&& block) {
  constexpr size_t kQsBytes = kQ4 ? 256 : 512;
  constexpr size_t kQs0 = packed_qs_offset(0, kQsBytes), kQs1 = packed_qs_offset(1, kQsBytes);
  constexpr size_t kScales0 = packed_scales_offset(0, kQsBytes), kScales1 = packed_scales_offset(1, kQsBytes);
  const uint8_t* pair = group;
  auto scales = [&](size_t offset) { return reinterpret_cast<const uint16_t*>(pair + offset); };
  int64_t b = 0;
  for (; b + 1 < n_blocks; b += 2, pair += packed_pair_bytes(kQsBytes)) {
    constexpr size_t kLines = (packed_pair_bytes(kQsBytes) + 63) / 64, kFirstHalf = kLines / 2;
    if constexpr (kPrefetch)
      for (size_t line = 0; line < kFirstHalf; ++line) _mm_prefetch(reinterpret_cast<const char*>(pair + ahead + 64 * line), _MM_HINT_T1);
    block(b, pair + kQs0, scales(kScales0));
    if constexpr (kPrefetch)
      for (size_t line = kFirstHalf; line < kLines; ++line) _mm_prefetch(reinterpret_cast<const char*>(pair + ahead + 64 * line), _MM_HINT_T1);
    block(b + 1, pair + kQs1, scales(kScales1));
  }
  if (b < n_blocks) block(b, pair + kQs0, scales(kScales0));
}

// One token: no software prefetch. With the scales beside their quants a group is one forward
// stream, which the hardware prefetchers follow. (With all scales after the quants, asking 2 KiB
// ahead had taken one-token calls from 14.6 to 16.4 GB/s; on this layout, prefetching every line of
// the pair 8 or 16 pairs ahead made TinyLlama Q4_0's decode 5-10% slower, Zen 5.)
// Several tokens: every line 8 KiB ahead (into the next groups at a group's end: a thread's groups
// are contiguous). There the kernel is compute-bound and the hardware prefetchers alone leave it
// waiting on DRAM as well: kernels_bench stream/<type>/avx512/T/5, Zen 5, two threads, Q4_0
// 16-25 -> 26-34 GB/s, Q8_0 17 -> 23-30 (2, 4, 8, 12 and 16 KiB ahead, into L1 or L2, all within
// the noise of each other); TinyLlama's 5-token verification pass went from 2.16-2.19 to 1.39-1.43
// one-token steps (Q4_0) and from 2.25-2.32 to 1.55-1.63 (Q8_0).
// The first pass over a group (t0 = 0) asks for lines 8 KiB ahead in the group; the passes for later
// tokens (t0 > 0: 3 or more Q8_0 tokens, 9 or more Q4_0) read the group from L2 and ask for the next
// group, the next this thread runs unless the group is its last: DRAM idled while they
// ran. `stream/Q8_0/avx512/T/5`, Zen 4: one thread 59-66 -> 49-50 ms, two 34-38 -> 29-31.
// The requests go to L2 (T1), half a pair before each block: on Zen 4, whose L1 is 32 KB, into L1 they
// held the loop up (`stream/<type>/avx512/1/5`, one thread: Q4_0 33.8 -> 26.0 ms, Q8_0 81 -> 58 ms).
constexpr size_t kWithinGroupBytes = 8192;
constexpr bool pass_prefetches(int n_tokens, bool first_pass) { return !first_pass || n_tokens > 1; }
inline size_t pass_ahead_bytes(bool first_pass, const PackedRows& w) { return first_pass ? kWithinGroupBytes : w.group_bytes; }

template <bool kQ4, int N, bool kFirstPass>
NUCLEUS_AVX512 void group_tokens(const PackedRows& w, int64_t g, const PackedActivations& x, int64_t t0, float* out) {
  constexpr int kShift = kQ4 ? 3 : 7;  // offset 8 or 128 of the unsigned quants
  const int64_t nb = x.n_blocks;
  __m512 acc[N];
  for (int t = 0; t < N; ++t) acc[t] = _mm512_setzero_ps();
  for_each_block<kQ4, pass_prefetches(N, kFirstPass)>(w.group(g), nb, pass_ahead_bytes(kFirstPass, w), [&](int64_t b, const uint8_t* qs, const uint16_t* scales) NUCLEUS_AVX512 {
    __m512i wq[8];
    load_block<kQ4>(qs, wq);
    const __m512 dw = _mm512_cvtph_ps(_mm256_load_si256(reinterpret_cast<const __m256i*>(scales)));
    for (int t = 0; t < N; ++t) {
      const int64_t i = (t0 + t) * nb + b;
      const int8_t* xq = x.blocks[i].qs;
      __m512i s0 = _mm512_dpbusd_epi32(_mm512_setzero_si512(), wq[0], broadcast4(xq));
      __m512i s1 = _mm512_dpbusd_epi32(_mm512_setzero_si512(), wq[1], broadcast4(xq + 4));
      s0 = _mm512_dpbusd_epi32(s0, wq[2], broadcast4(xq + 8));
      s1 = _mm512_dpbusd_epi32(s1, wq[3], broadcast4(xq + 12));
      s0 = _mm512_dpbusd_epi32(s0, wq[4], broadcast4(xq + 16));
      s1 = _mm512_dpbusd_epi32(s1, wq[5], broadcast4(xq + 20));
      s0 = _mm512_dpbusd_epi32(s0, wq[6], broadcast4(xq + 24));
      s1 = _mm512_dpbusd_epi32(s1, wq[7], broadcast4(xq + 28));
      const __m512i sum = _mm512_sub_epi32(_mm512_add_epi32(s0, s1), _mm512_set1_epi32(x.sum[i] << kShift));
      const __m512 d = _mm512_mul_ps(dw, _mm512_set1_ps(x.scale[i]));
      acc[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sum), d, acc[t]);
    }
  });
  for (int t = 0; t < N; ++t) _mm512_storeu_ps(out + t * kPackRows, acc[t]);
}

// Dword j of every 128-bit lane of v, in all 16 lanes (VPSHUFD: a shuffle pipe, not a load).
NUCLEUS_AVX512 inline __m512i dword_everywhere(__m512i v, int j) {
  switch (j) {
    case 0: return _mm512_shuffle_epi32(v, _MM_PERM_AAAA);
    case 1: return _mm512_shuffle_epi32(v, _MM_PERM_BBBB);
    case 2: return _mm512_shuffle_epi32(v, _MM_PERM_CCCC);
    default: return _mm512_shuffle_epi32(v, _MM_PERM_DDDD);
  }
}

// Q8_0 in lane order (see packed_dot.h): one float accumulator per 4-column chunk and token, so
// two tokens fill 16 of the 32 registers.
//
// Per chunk and token the loop issues a VPDPBUSD and a VFMADD (which share two pipes) and needs the
// chunk's bias (a broadcast load), its 4 activation bytes and 1/N of a 64-byte weight load. Zen 5
// loads at most two registers a cycle, broadcasts included, so the activations come from two
// 16-byte broadcasts per block and a VPSHUFD per chunk: kernels_bench gemm_l2/Q8_0/avx512/5, one
// core, 116-121 -> 131-137 G multiply-adds/s (alternating binaries, two rounds).
//
// Where 512-bit operations run as two 256-bit halves (Zen 4), a VPSHUFD competes with VPDPBUSD and
// VFMADD for the multiplier pipes (a VPDPBUSD + VPSHUFD pair takes 1.55 cycles there, against 1.0
// with the 4 bytes as a broadcast load, which the load unit does alone), and loads are not the
// limit: kActivationLoads takes each chunk's 4 activation bytes as a broadcast load and each
// weight register where it is used (loading all 8 first kept half of the accumulators on the
// stack). Zen 4, alternating binaries, three rounds each: kernels_bench gemm_l2/Q8_0/avx512/5, one
// core, 65-76 -> 79-85 G multiply-adds/s; /8 74-77 -> 83-86; stream/Q8_0/avx512/1/5 13.3-14.6 ->
// 14.2-15.8 GB/s (two threads, /2/5, within the noise); TinyLlama Q8_0's 5-token verification pass
// (`bench spec ... -t 2`) 40.0-42.8 -> 40.0-40.7 ms. The integers and float steps are the same, so
// are the bits.
template <int N, bool kFirstPass, bool kActivationLoads>
NUCLEUS_AVX512 void q8_0_lanes_tokens(const PackedRows& w, int64_t g, const PackedActivations& x, int64_t t0, float* out) {
  const int64_t nb = x.n_blocks;
  __m512 acc[N][8];
  for (int t = 0; t < N; ++t)
    for (int c = 0; c < 8; ++c) acc[t][c] = _mm512_setzero_ps();
  if constexpr (kActivationLoads) {
    for_each_block<false, pass_prefetches(N, kFirstPass)>(w.group(g), nb, pass_ahead_bytes(kFirstPass, w), [&](int64_t b, const uint8_t* qs, const uint16_t* scales) NUCLEUS_AVX512 {
      const __m512 dw = _mm512_cvtph_ps(_mm256_load_si256(reinterpret_cast<const __m256i*>(scales)));
      __m512 d[N];
      const int8_t* xq[N];
      const int32_t* chunk_bias[N];
      for (int t = 0; t < N; ++t) {
        const int64_t i = (t0 + t) * nb + b;
        xq[t] = x.blocks[i].qs;
        chunk_bias[t] = x.chunk_bias + 8 * i;
        d[t] = _mm512_mul_ps(dw, _mm512_set1_ps(x.scale[i]));
      }
      for (int c = 0; c < 8; ++c) {
        const __m512i wq = _mm512_load_si512(qs + 64 * c);
        for (int t = 0; t < N; ++t) {
          const __m512i sum = _mm512_dpbusd_epi32(_mm512_set1_epi32(chunk_bias[t][c]), wq, broadcast4(xq[t] + 4 * c));
          acc[t][c] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sum), d[t], acc[t][c]);
        }
      }
    });
  } else {
    for_each_block<false, pass_prefetches(N, kFirstPass)>(w.group(g), nb, pass_ahead_bytes(kFirstPass, w), [&](int64_t b, const uint8_t* qs, const uint16_t* scales) NUCLEUS_AVX512 {
      __m512i wq[8];
      load_block<false>(qs, wq);
      const __m512 dw = _mm512_cvtph_ps(_mm256_load_si256(reinterpret_cast<const __m256i*>(scales)));
      for (int t = 0; t < N; ++t) {
        const int64_t i = (t0 + t) * nb + b;
        const int8_t* xq = x.blocks[i].qs;
        const int32_t* chunk_bias = x.chunk_bias + 8 * i;
        const __m512 d = _mm512_mul_ps(dw, _mm512_set1_ps(x.scale[i]));
        const __m512i x16[2] = {_mm512_broadcast_i32x4(_mm_loadu_si128(reinterpret_cast<const __m128i*>(xq))),
                                _mm512_broadcast_i32x4(_mm_loadu_si128(reinterpret_cast<const __m128i*>(xq + 16)))};
        for (int c = 0; c < 8; ++c) {
          // Starting from −128·Σx removes the +128 offset of the unsigned weights exactly.
          const __m512i sum = _mm512_dpbusd_epi32(_mm512_set1_epi32(chunk_bias[c]), wq[c], dword_everywhere(x16[c / 4], c % 4));
          acc[t][c] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sum), d, acc[t][c]);
        }
      }
    });
  }
  for (int t = 0; t < N; ++t) {
    const __m512 a0 = _mm512_add_ps(acc[t][0], acc[t][4]), a1 = _mm512_add_ps(acc[t][1], acc[t][5]);
    const __m512 a2 = _mm512_add_ps(acc[t][2], acc[t][6]), a3 = _mm512_add_ps(acc[t][3], acc[t][7]);
    _mm512_storeu_ps(out + t * kPackRows, _mm512_add_ps(_mm512_add_ps(a0, a2), _mm512_add_ps(a1, a3)));
  }
}

template <bool kActivationLoads>
void q8_0_lanes_kernel(const PackedRows& w, int64_t g, const PackedActivations& x, int64_t t0, int n, float* out) {
  // An odd count of 3 or more starts with 3 tokens (24 accumulators: only the split form, whose
  // activations come from memory operands, has the registers): a 5-token verification pass runs
  // 3 + 2 instead of 2 + 2 + 1, one pass over the group fewer and no lone token. Zen 4, alternating
  // binaries, four rounds of three: gemm_l2/Q8_0/avx512/5 30.9-31.7 -> 28.9-29.2 us;
  // stream/Q8_0/avx512/1/5 45.2-47.0 -> 42.1-45.1 ms, /2/5 26.2-29.1 -> 25.4-28.3 ms.
  if constexpr (kActivationLoads) {
    if (n >= 3 && n % 2 == 1) {
      if (t0 == 0) q8_0_lanes_tokens<3, true, true>(w, g, x, t0, out);
      else q8_0_lanes_tokens<3, false, true>(w, g, x, t0, out);
      n -= 3, t0 += 3, out += 3 * kPackRows;
    }
  }
  if (n >= 2 && t0 == 0) q8_0_lanes_tokens<2, true, kActivationLoads>(w, g, x, t0, out), n -= 2, t0 += 2, out += 2 * kPackRows;
  for (; n >= 2; n -= 2, t0 += 2, out += 2 * kPackRows) q8_0_lanes_tokens<2, false, kActivationLoads>(w, g, x, t0, out);
  // A lone token keeps the shuffles: it streams from DRAM, and there the split form measured slower
  // (stream/Q8_0/avx512/1/1, Zen 4: 18.8-21.8 against 21.0-22.8 GB/s; TinyLlama Q8_0's one-token
  // step 30-33 against 26 ms).
  if (n == 1 && t0 == 0) q8_0_lanes_tokens<1, true, false>(w, g, x, t0, out);
  else if (n == 1) q8_0_lanes_tokens<1, false, false>(w, g, x, t0, out);
}

template <bool kQ4, bool kFirstPass>
void group_kernel_pass(const PackedRows& w, int64_t g, const PackedActivations& x, int64_t t0, int n, float* out) {
  switch (n) {
    case 1: return group_tokens<kQ4, 1, kFirstPass>(w, g, x, t0, out);
    case 2: return group_tokens<kQ4, 2, kFirstPass>(w, g, x, t0, out);
    case 3: return group_tokens<kQ4, 3, kFirstPass>(w, g, x, t0, out);
    case 4: return group_tokens<kQ4, 4, kFirstPass>(w, g, x, t0, out);
    case 5: return group_tokens<kQ4, 5, kFirstPass>(w, g, x, t0, out);
    case 6: return group_tokens<kQ4, 6, kFirstPass>(w, g, x, t0, out);
    case 7: return group_tokens<kQ4, 7, kFirstPass>(w, g, x, t0, out);
    default: return group_tokens<kQ4, 8, kFirstPass>(w, g, x, t0, out);
  }
}

template <bool kQ4>
void group_kernel(const PackedRows& w, int64_t g, const PackedActivations& x, int64_t t0, int n, float* out) {
  if (t0 == 0) group_kernel_pass<kQ4, true>(w, g, x, t0, n, out);
  else group_kernel_pass<kQ4, false>(w, g, x, t0, n, out);
}

}  // namespace

// AMD family 19h with AVX-512 is Zen 4, whose 512-bit operations run as two 256-bit halves (Zen 3,
// the family's other members, has no AVX-512; Zen 5 is family 1Ah, with full-width pipes).
bool cpu_splits_512bit_ops() { return __builtin_cpu_is("amdfam19h") && __builtin_cpu_supports("avx512f"); }

void packed_q4_0_avx512(const PackedRows& w, int64_t g, const PackedActivations& x, int64_t t0, int n, float* out) {
  group_kernel<true>(w, g, x, t0, n, out);
}
void packed_q8_0_avx512(const PackedRows& w, int64_t g, const PackedActivations& x, int64_t t0, int n, float* out) {
  q8_0_lanes_kernel<false>(w, g, x, t0, n, out);
}
void packed_q8_0_avx512_split(const PackedRows& w, int64_t g, const PackedActivations& x, int64_t t0, int n, float* out) {
  q8_0_lanes_kernel<true>(w, g, x, t0, n, out);
}

}  // namespace nucleus
