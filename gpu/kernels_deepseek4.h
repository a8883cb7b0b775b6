// Host-side launchers of the `deepseek4` block's own kernels (kernels_deepseek4.cu), used by
// cuda_deepseek4.cpp. Each has a CPU twin in core/deepseek4_ops.h (or, for the table-driven
// RoPE, core's rope_apply) and a parity test in tests/gpu/deepseek4_test.cpp. Formulas:
// ../shared/docs/ARCH_DEEPSEEK4.md, sections cited per launcher. All pointers are device
// pointers; shapes [rows][cols] row-major; sizes are checked on the host (Error naming the
// launcher and the numbers) before any launch, and every launch is checked (cudaGetLastError).
// Sums run in the CPU twin's order (sequential per output, dot products with dot_f32's eight
// lanes), so results differ from the CPU only through expf / division rounding (~1 ulp).
//
// pos_dev (optional, every launcher that takes it): the position of token 0 read from device
// memory at run time instead of pos0, for the launches of a decode step captured once as a CUDA
// graph and replayed at every position (gpu/decode_graph.h); such a launch takes one token
// (n = 1) and gives, at each position, what a direct launch at that position gives, bit for bit.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace moepack::gpu {

// §4.2, n tokens: mix [n][(2+HC)*HC], base [(2+HC)*HC], scale [3] -> pre [n][HC],
// post [n][HC], M [n][HC][HC] (M[dst][src]); ds4::hc_weights per token. HC in 1..8.
void ds4_hc_weights(const float* mix, int64_t n, const float* base, const float* scale, int64_t HC,
                    uint32_t iters, float eps, float* pre, float* post, float* M, cudaStream_t s);

// §4.9 head weights: pre[t][s] = sigmoid(mix[t][s]·scale[0] + base[s]) + eps; mix [n][HC].
void ds4_head_weights(const float* mix, int64_t n, const float* base, const float* scale, int64_t HC,
                      float eps, float* pre, cudaStream_t s);

// §4.2: h[t][c] = Σ_s pre[t][s]·S[t][s][c]; S [n][HC][E], pre [n][HC], h [n][E].
void ds4_hc_collapse(const float* S, const float* pre, int64_t n, int64_t HC, int64_t E, float* h,
                     cudaStream_t s);

// §4.3, in place: S[t][dst] = post[t][dst]·y[t] + Σ_src M[t][dst][src]·S[t][src].
// S [n][HC][E], y [n][E], post [n][HC], M [n][HC][HC]. HC in 1..8.
void ds4_hc_expand(float* S, const float* y, const float* post, const float* M, int64_t n, int64_t HC,
                   int64_t E, cudaStream_t s);

// §4.6 history: for t < n, position p = pos0 + t goes to ring slot p mod ring:
// a[slot] = ta[t], g[slot] = tg[t] + ape[p mod m]. ta, tg [n][cd]; ape [m][cd]; a, g [ring][cd].
// Requires n <= ring (no slot written twice).
void ds4_comp_store(const float* ta, const float* tg, const float* ape, int64_t n, int64_t pos0, int64_t m,
                    int64_t ring, int64_t cd, float* a, float* g, cudaStream_t s,
                    const int32_t* pos_dev = nullptr);

// §4.6 pooling of the nb consecutive compressed rows b0 .. b0+nb-1 (block starts s = b·m):
// kappa [nb][d] = ds4::compress_pool(a, g, ring, d, c, m, s) for each. c in {1, 2}. The
// positions read must still be in the rings (caller's invariant: s - m >= highest - ring).
// pos_dev (nb = 1, b0 ignored): the row that position p = *pos_dev completes, b0 = (p + 1) / m - 1,
// when m divides p + 1; otherwise the launch writes nothing.
void ds4_compress_pool(const float* a, const float* g, int64_t ring, int64_t d, int64_t c, int64_t m,
                       int64_t b0, int64_t nb, float* kappa, cudaStream_t s,
                       const int32_t* pos_dev = nullptr);

// RoPE of n_rows rows whose positions are pos_first + r·pos_step (compressed rows: step m):
// as rope() of kernels.h (rope_table layout, n_dims rotated values of each head at x + row ·
// row_stride + h · head_stride), positions < table_rows (checked). pos_dev (n_rows = 1,
// pos_first ignored): the row a position p = *pos_dev completes, at pos_first = p + 1 - pos_step,
// when pos_step divides p + 1; otherwise the launch writes nothing (p < table_rows is the
// caller's invariant).
void ds4_rope_rows(float* x, int64_t n_rows, int64_t row_stride, int64_t n_heads, int64_t head_stride,
                   const float* cs_table, int64_t table_rows, int64_t pos_first, int64_t pos_step, int n_dims,
                   bool neox, cudaStream_t s, const int32_t* pos_dev = nullptr);

// The row a decode step's position p = *pos_dev writes, from src [width] (device):
//   m = 0: into ring slot p mod ring: dst + (p mod ring) · width (the raw K ring);
//   m > 0: the compressed row p completes, dst + ((p + 1) / m - 1) · width, when m divides p + 1;
//          otherwise nothing (ring ignored).
void ds4_store_row_at(const float* src, int64_t width, float* dst, int64_t ring, int64_t m,
                      const int32_t* pos_dev, cudaStream_t s);

// §4.7 indexer scores: for t < n, rows r < nvis(t) = (pos0 + t + 1) / 4:
// scores[t * stride + r] = ds4::indexer_score(q[t], w[t], rows[r], HI, DI, wscale).
// q [n][HI][DI] (already roped), w [n][HI], rows [≥ nvis(n-1)][DI]. Requires stride >= nvis(n-1).
// pos_dev: the launch serves positions below max_kv (its grid: max_kv / 4 rows; stride >= that).
void ds4_indexer_scores(const float* q, const float* w, int64_t n, int64_t HI, int64_t DI, const float* rows,
                        int64_t pos0, float wscale, float* scores, int64_t stride, cudaStream_t s,
                        const int32_t* pos_dev = nullptr, int64_t max_kv = 0);

// §4.5 / §4.7: the compressed rows each query sees, for t < n (p = pos0 + t, nvis = (p + 1) / ratio
// rows completed): all of them, sel[t][r] = r for r < nvis, count[t] = nvis, when ratio != 4 or
// nvis <= top_k; else the indexer's top_k rows by score (scores[t * stride + r], r < nvis), best
// first, equal scores by the lower row (the CPU reference's std::partial_sort comparator in
// core/arch_deepseek4.cpp; -0 counts as +0), count[t] = top_k. One block per query: a radix select
// of the top_k-th score (four 8-bit passes over order-preserving keys), the rows above it and
// the lowest rows equal to it, then a bitonic sort of the top_k in shared memory.
// sel [n][sel_stride] int32, count [n] int32 (device). Checked on the host (Error naming the
// numbers): ratio >= 1, top_k >= 1 where ratio is 4 (at most 4096 where a query sorts), and every count fits
// sel_stride (the last position, pos0 + n - 1 or with pos_dev max_kv - 1, decides). pos_dev: as the others'.
void ds4_select_rows(const float* scores, int64_t stride, int64_t n, int64_t pos0, int64_t ratio,
                     int64_t top_k, int32_t* sel, int64_t sel_stride, int32_t* count, cudaStream_t s,
                     const int32_t* pos_dev = nullptr, int64_t max_kv = 0);

// §4.5 sliding-window + compressed attention with sinks, for t < n, head h < H (p = pos0 + t):
// keys = raw rows j in [max(0, p - n_swa + 1), p] (kraw ring of ring_raw rows of D, row j in
// slot j mod ring_raw), then comp[sel[t * sel_stride + i]] for i < sel_count[t] (comp rows of D);
// out[t][h] = ds4::attend_sink(q[t][h], keys, sinks[h], kq_scale) (not de-roped).
// q, out [n][H][D]; sel [n][sel_stride] (sel_count[t] <= sel_stride, caller's invariant);
// scratch: n·H·max_keys floats. Checked on the host: max_keys >= n_swa + sel_stride,
// ring_raw >= n_swa + n - 1, D <= 1024.
void ds4_attend(const float* q, int64_t n, int64_t H, int64_t D, int64_t pos0, const float* kraw,
                int64_t ring_raw, int64_t n_swa, const float* comp, const int32_t* sel, int64_t sel_stride,
                const int32_t* sel_count, const float* sinks, float kq_scale, float* scratch,
                int64_t max_keys, float* out, cudaStream_t s, const int32_t* pos_dev = nullptr);

}  // namespace moepack::gpu
