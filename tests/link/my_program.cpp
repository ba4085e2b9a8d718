// A user's program built against hybla with the README's commands ("Using the library"): its body is the README's
// example, line for line (tests/link/check.sh compares them), followed by checksums of the results.
#include <cstdio>

#include "engine/hybla.hpp"
#include "io/read_graph.hpp"
using namespace hybla;

int main() {
    try {
        auto g = io::read_graph<double>("data/karate/karate.mtx");
        const Matrix<double>& A = g.matrix;
        Matrix<double> C(A.nrows(), A.ncols());
        mxm(C, no_mask, no_accum, plus_times{}, A, A);                         // SpGEMM
        Matrix<std::uint64_t> T(A.nrows(), A.ncols());
        mxm(T, A, no_accum, plus_pair{}, A, A, Descriptor{.mask_structure = true});  // masked SpGEMM
        Vector<double> x = Vector<double>::full(A.ncols(), 1.0), y(A.nrows());
        mxv(y, no_mask, no_accum, plus_times{}, A, x);                         // SpMV
        DenseMatrix<double> X(A.ncols(), 16, 1.0), Y(A.nrows(), 16);
        mxm(Y, no_mask, no_accum, plus_times{}, A, X);                         // SpMM

        // Whether the CUDA backend is compiled into this program: a CUDA build of hybla linked without
        // HYBLA_HAVE_CUDA=1 would run on the CPU only, even on a GPU machine.
        std::printf("cuda compiled: %s\n", cuda_built() ? "yes" : "no");
        std::printf("context: %s\n", A.context().name().c_str());
        Vector<double> rows_of_y(Y.nrows());
        reduce(rows_of_y, no_mask, no_accum, plus_monoid{}, Y);
        std::printf("sums: A*A %.0f, triangles*6 %llu, A*x %.0f, A*X %.0f\n", reduce(plus_monoid{}, C),
                    static_cast<unsigned long long>(reduce(plus_monoid{}, T)), reduce(plus_monoid{}, y),
                    reduce(plus_monoid{}, rows_of_y));
    } catch (const Error& e) {
        std::fprintf(stderr, "my_program: %s\n", e.what());
        return 2;
    }
}
