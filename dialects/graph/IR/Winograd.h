// The matrices of Winograd's minimal filtering F(m x m, 3 x 3) that define graph.winograd_input
// and graph.winograd_output (and the weight transform kiln-winograd-convs applies at compile time).
//
// A 3x3 convolution of an a x a input tile d (a = m + 2) gives the m x m outputs
//   Y = A^T [ (G g G^T) (.) (B^T d B) ] A
// ((.) element-wise), so per tile and channel pair the multiply count is a^2 instead of 9 m^2:
// 16 instead of 36 for m = 2, 36 instead of 144 for m = 4. The interpolation points are
// 0, 1, -1 (m = 2) and 0, 1, -1, 2, -2 (m = 4), plus the point at infinity: the usual choice
// (Lavin and Gray, "Fast Algorithms for Convolutional Neural Networks", 2016), whose B^T has small
// integer entries, so the input transform is mostly additions.
#ifndef KILN_DIALECTS_GRAPH_WINOGRAD_H
#define KILN_DIALECTS_GRAPH_WINOGRAD_H

#include <cstdint>

namespace kiln::graph::winograd {

/// The transforms of F(m x m, 3 x 3), row-major: bt [a][a], g [a][3], at [m][a].
struct Matrices {
  int64_t m, a;
  const double *bt, *g, *at;
};

namespace detail {
// F(2x2, 3x3).
inline constexpr double kBt2[16] = {1, 0, -1, 0, //
                                    0, 1, 1, 0,  //
                                    0, -1, 1, 0, //
                                    0, 1, 0, -1};
inline constexpr double kG2[12] = {1, 0, 0, 0.5, 0.5, 0.5, 0.5, -0.5, 0.5, 0, 0, 1};
inline constexpr double kAt2[8] = {1, 1, 1, 0, //
                                   0, 1, -1, -1};
// F(4x4, 3x3).
inline constexpr double kBt4[36] = {4, 0, -5, 0, 1, 0,   //
                                    0, -4, -4, 1, 1, 0,  //
                                    0, 4, -4, -1, 1, 0,  //
                                    0, -2, -1, 2, 1, 0,  //
                                    0, 2, -1, -2, 1, 0,  //
                                    0, 4, 0, -5, 0, 1};
inline constexpr double kG4[18] = {1.0 / 4,  0,         0,         //
                                   -1.0 / 6, -1.0 / 6,  -1.0 / 6,  //
                                   -1.0 / 6, 1.0 / 6,   -1.0 / 6,  //
                                   1.0 / 24, 1.0 / 12,  1.0 / 6,   //
                                   1.0 / 24, -1.0 / 12, 1.0 / 6,   //
                                   0,        0,         1};
inline constexpr double kAt4[24] = {1, 1, 1, 1, 1, 0,   //
                                    0, 1, -1, 2, -2, 0, //
                                    0, 1, 1, 4, 4, 0,   //
                                    0, 1, -1, 8, -8, 1};
} // namespace detail

/// Whether F(tile x tile, 3 x 3) is one kiln implements.
inline bool supportedTile(int64_t tile) { return tile == 2 || tile == 4; }

/// The matrices of F(tile x tile, 3 x 3); `tile` must be supported.
inline Matrices matrices(int64_t tile) {
  if (tile == 4)
    return {4, 6, detail::kBt4, detail::kG4, detail::kAt4};
  return {2, 4, detail::kBt2, detail::kG2, detail::kAt2};
}

} // namespace kiln::graph::winograd

#endif
