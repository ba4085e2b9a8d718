// gpu_contract: hybla's graph contraction (algorithms/contract.hpp, plus, float, on the GPU) against the same
// contraction as two cuSPARSE SpGEMMs (cusparseSpGEMM, CUSPARSE_SPGEMM_DEFAULT) with S the k x n label
// indicator, in the same run on the same GPU: C = (S·A)·Sᵀ and C = S·(A·Sᵀ) (contract's order) are both timed
// and the faster is the one compared.
//
//   gpu_contract GRAPH CLUSTERS [--runs N]
//
// CLUSTERS: mcl's output for GRAPH (one cluster per line, vertex names as GRAPH names them); a vertex in no
// cluster gets a label of its own. Times are medians of --runs repetitions between CUDA events, each
// including the allocations of the call. Three hybla times: the whole `contract` call as a user makes it (the
// host's labels uploaded and numbered on the GPU into S and Sᵀ, hybla::indicator, then A·Sᵀ and S·(A·Sᵀ)); the
// same call given the labels in a Vector already on the GPU (numbered in place); and its two products alone with
// S and Sᵀ already on the GPU, which is what the cuSPARSE time covers (S and Sᵀ are built and uploaded outside its
// timing); also the indicator alone. Then the whole call and cuSPARSE's faster order once more, alternating call
// by call, each the median of 4 x --runs. The results are compared (entries, and values to 1e-4 relative; the two
// whole calls exactly) before the line is printed; a mismatch makes the exit status 1.
#include <cuda_runtime.h>
#include <cusparse.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "algorithms/contract.hpp"
#include "engine/hybla.hpp"
#include "bench/cusparse_spgemm.hpp"
#include "bench/gpu_common.hpp"
#include "io/read_graph.hpp"

namespace {

using namespace hybla;
using namespace hybla::bench;



// One call of f between CUDA events, ms.
template <class F>
float time_ms(F&& f) {
    cudaEvent_t a, b;
    cudaEventCreate(&a);
    cudaEventCreate(&b);
    cudaEventRecord(a);
    f();
    cudaEventRecord(b);
    cudaEventSynchronize(b);
    float ms = 0;
    cudaEventElapsedTime(&ms, a, b);
    cudaEventDestroy(a);
    cudaEventDestroy(b);
    return ms;
}

float median(std::vector<float> t) {
    std::sort(t.begin(), t.end());
    return t[t.size() / 2];
}

template <class F>
double median_ms(int runs, F&& f) {
    std::vector<float> t;
    f();  // warm-up
    for (int r = 0; r < runs; ++r) t.push_back(time_ms(f));
    return median(t);
}

// The same shape and pattern (host matrices).
bool same_pattern(const Matrix<float>& x, const Matrix<float>& y) {
    return x.nrows() == y.nrows() && x.ncols() == y.ncols() &&
           std::ranges::equal(x.row_offsets(), y.row_offsets()) && std::ranges::equal(x.col_indices(), y.col_indices());
}

}  // namespace

int main(int argc, char** argv) {
    program = "gpu_contract";
    if (argc < 3 || std::string(argv[1]) == "-h") {
        std::fprintf(stderr, "usage: gpu_contract GRAPH CLUSTERS [--runs N]\n");
        return argc < 3 ? 2 : 0;
    }
    int runs = 20;
    for (int k = 3; k + 1 < argc; k += 2)
        if (std::string(argv[k]) == "--runs") runs = std::max(1, std::atoi(argv[k + 1]));
    try {
        const Context gpu = Context::cuda();
        // An .abc graph as the contract program reads it: mirrored, repeated pairs at their largest weight.
        const std::string path = argv[1];
        io::Graph<float> g = io::graph_format_of(path) == io::GraphFormat::abc
                                 ? io::read_abc<float>(path, {.undirected = true}, max_op{})
                                 : io::read_graph<float>(path);
        const Index n = g.matrix.nrows();
        const std::vector<std::int64_t> labels = read_cluster_labels(argv[2], g.names, n);
        const Matrix<float> a = g.matrix.to(gpu);
        algorithms::Contracted<float, std::int64_t> ours;
        const double hybla_ms = median_ms(runs, [&] {
            ours = algorithms::contract(a, labels);
            cuda::synchronize(gpu.stream());
        });
        // The same call with the labels already on the GPU (a full Vector, as a GPU computation leaves them).
        std::vector<Index> every(n);
        for (Index v = 0; v < n; ++v) every[v] = v;
        const Vector<std::int64_t> label_vector =
            Vector<std::int64_t>::from_tuples(n, every, labels, plus_op{}, Context::cpu()).to(gpu);
        algorithms::Contracted<float, std::int64_t> ours_v;
        const double vector_ms = median_ms(runs, [&] {
            ours_v = algorithms::contract(a, label_vector);
            cuda::synchronize(gpu.stream());
        });
        // The same product with cuSPARSE, S in the renumbering contract used.
        const auto cl = algorithms::compact_labels(std::span<const std::int64_t>(labels));
        const Index k = cl.labels.size();
        std::vector<Index> vs(n);
        for (Index v = 0; v < n; ++v) vs[v] = v;
        const std::vector<float> ones(n, 1.0f);
        const Matrix<float> s = Matrix<float>::from_tuples(k, n, std::span<const Index>(cl.compact),
                                                           std::span<const Index>(vs), std::span<const float>(ones),
                                                           first_op{}, Context::cpu());
        // hybla's two products alone, S and Sᵀ on the GPU.
        const Matrix<float> s_gpu = s.to(gpu), st_gpu = s.transposed().to(gpu);
        Matrix<float> products;
        const double products_ms = median_ms(runs, [&] {
            products = algorithms::detail::coarsen<plus_monoid>(s_gpu, st_gpu, a);
            cuda::synchronize(gpu.stream());
        });
        // The step of the whole call before its products, alone: the labels numbered into S and Sᵀ on the GPU.
        Indicator<float, std::int64_t> ind;
        const double indicator_ms = median_ms(runs, [&] {
            ind = indicator<float>(labels, LabelOrder::first_appearance, gpu);
            cuda::synchronize(gpu.stream());
        });
        const bool same_indicator = ind.labels == cl.labels &&
                                    same_pattern(ind.s.to(Context::cpu()), s) &&
                                    same_pattern(ind.st.to(Context::cpu()), s.transposed());
        const DeviceCsr ds = upload(s, "S"), dst = upload(s.transposed(), "S transposed"),
                        da = upload(g.matrix.to(Context::cpu()), "A");
        cusparseHandle_t h;
        sparse_check(cusparseCreate(&h), "cusparseCreate");
        DeviceCsr theirs, other;
        // cuSPARSE's two orders into `out`: (S·A)·Sᵀ and S·(A·Sᵀ).
        auto left = [&](DeviceCsr& out) {
            out = DeviceCsr{};
            const DeviceCsr sa = spgemm(h, ds, da);
            out = spgemm(h, sa, dst);
        };
        auto right = [&](DeviceCsr& out) {
            out = DeviceCsr{};
            const DeviceCsr as = spgemm(h, da, dst);
            out = spgemm(h, ds, as);
        };
        const double left_ms = median_ms(runs, [&] { left(other); });
        const double right_ms = median_ms(runs, [&] { right(theirs); });
        const double cusparse_ms = std::min(left_ms, right_ms);
        // The whole call and cuSPARSE's faster order again, alternating call by call (4 x --runs rounds): the
        // GPU's and the host's state between runs moves cuSPARSE's time by up to 1.4x from one process to the
        // next, and alternation gives both sides the same.
        std::vector<float> ours_alt, theirs_alt;
        for (int r = 0; r < 4 * runs; ++r) {
            ours_alt.push_back(time_ms([&] {
                ours = algorithms::contract(a, labels);
                cuda::synchronize(gpu.stream());
            }));
            theirs_alt.push_back(time_ms([&] { left_ms < right_ms ? left(theirs) : right(theirs); }));
        }
        if (left_ms < right_ms) right(theirs);  // (the comparison below reads S·(A·Sᵀ) from theirs)
        const double ours_alt_ms = median(ours_alt), theirs_alt_ms = median(theirs_alt);
        // Compare.
        const Matrix<float> mine = ours.matrix.to(Context::cpu());
        std::vector<int> off(theirs.m + 1), col(theirs.nnz);
        std::vector<float> val(theirs.nnz);
        cuda_check(cudaMemcpy(off.data(), theirs.off, off.size() * sizeof(int), cudaMemcpyDeviceToHost), "copy");
        cuda_check(cudaMemcpy(col.data(), theirs.col, col.size() * sizeof(int), cudaMemcpyDeviceToHost), "copy");
        cuda_check(cudaMemcpy(val.data(), theirs.val, val.size() * sizeof(float), cudaMemcpyDeviceToHost), "copy");
        bool same = Offset(theirs.nnz) == mine.nvals() && theirs.nnz == other.nnz;
        for (Index i = 0; same && i < k; ++i)
            for (int p = off[i]; same && p < off[i + 1]; ++p) {
                const auto x = mine.get(i, Index(col[p]));
                same = x && std::fabs(*x - val[p]) <= 1e-4f * std::max(1.0f, std::fabs(val[p]));
            }
        std::printf("gpu_contract on %s: %s (%llu vertices, %llu entries) by %s: %llu labels, result %llu entries\n",
                    cuda::device_name(gpu.device()).c_str(), argv[1], (unsigned long long)n,
                    (unsigned long long)g.matrix.nvals(), argv[2], (unsigned long long)k,
                    (unsigned long long)mine.nvals());
        same = same && products.nvals() == mine.nvals();
        const Matrix<float> mine_v = ours_v.matrix.to(Context::cpu());
        const bool same_v = ours_v.labels == ours.labels && same_pattern(mine_v, mine) &&
                            std::ranges::equal(mine_v.values(), mine.values());
        std::printf("cuSPARSE two SpGEMMs: (S·A)·Sᵀ %.3f ms, S·(A·Sᵀ) %.3f ms\n", left_ms, right_ms);
        std::printf("hybla contract %.3f ms, cuSPARSE two SpGEMMs %.3f ms, ratio %.2f, results %s\n", hybla_ms,
                    cusparse_ms, hybla_ms / cusparse_ms, same ? "agree" : "DIFFER");
        std::printf("alternating call by call (%d rounds): hybla contract %.3f ms, cuSPARSE's faster order %.3f ms, "
                    "ratio %.2f (hybla %.2fx as fast)\n",
                    4 * runs, ours_alt_ms, theirs_alt_ms, ours_alt_ms / theirs_alt_ms, theirs_alt_ms / ours_alt_ms);
        std::printf("hybla contract, labels already on the GPU (a Vector) %.3f ms, ratio %.2f, results %s\n", vector_ms,
                    vector_ms / cusparse_ms, same_v ? "agree" : "DIFFER");
        std::printf("hybla's two products alone (S, Sᵀ on the GPU) %.3f ms, ratio %.2f to cuSPARSE's\n", products_ms,
                    products_ms / cusparse_ms);
        std::printf("step alone: labels numbered into S and Sᵀ on the GPU (hybla::indicator) %.3f ms, %s\n",
                    indicator_ms, same_indicator ? "S, Sᵀ and labels agree" : "S, Sᵀ or labels DIFFER");
        same = same && same_indicator && same_v;
        theirs = DeviceCsr{};
        other = DeviceCsr{};
        cusparseDestroy(h);
        return same ? 0 : 1;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "gpu_contract: %s\n", e.what());
        return 2;
    }
}
