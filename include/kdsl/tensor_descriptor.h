// tensor_descriptor.h - a 2-D or 3-D row-major tensor in memory read tile by tile, as Triton's make_tensor_descriptor: on Hopper (sm_90a) the tiles are copied by TMA
#pragma once
#include <kdsl/block.h>
#include <kdsl/ops.h>

namespace kdsl {

// A rows x cols tensor of T at `base`, row i starting row_stride elements after row i - 1
// (the columns contiguous). load<R, C>(row, col) reads the R x C tile whose first element is
// (row, col): elements outside the tensor read 0, so ragged edges need no masks; store(row,
// col, tile) writes one, skipping the elements outside.
//
// On sm_90a, a tile that feeds a tensor-core dot inside a pipelined for_range is copied by
// the tensor memory accelerator (cp.async.bulk.tensor) into the swizzled shared-memory tile
// wgmma reads, one thread issuing the whole copy and an mbarrier announcing its arrival.
// That needs the descriptor's base, rows, cols and row_stride to be the kernel's arguments
// or constants (the launcher encodes the tensor map from their values), the base aligned to
// 16 bytes and row_stride * sizeof(T) a multiple of 16 (Scalar arguments specialized as
// divisible by 16 prove both); each tile's rows at most 256 and its columns a multiple of 16
// bytes. Every other tile, and every other target, reads through pointer arithmetic and a
// masked load, with the same result.
template <class T>
class TensorDescriptor {
 public:
  TensorDescriptor(const Ptr<T> &base, const Scalar<i32> &rows, const Scalar<i32> &cols, const Scalar<i32> &row_stride)
      : base_(base), rows_(rows), cols_(cols), row_stride_(row_stride) {}

  // row and col: Scalar<i32>s or integer literals.
  template <int R, int C, class Row, class Col>
  Block<std::remove_const_t<T>, R, C> load(const Row &row, const Col &col) const {
    constexpr std::array<int, 0> scalar{};
    return detail::emit_as<Block<std::remove_const_t<T>, R, C>>(
        OpKind::TileLoad, {base_.id(), rows_.id(), cols_.id(), row_stride_.id(), detail::lift<i32, scalar>(row).id(), detail::lift<i32, scalar>(col).id()});
  }

  // Writes the R x C tile `value` at (row, col); its elements outside the tensor are not
  // written. On sm_90a, where the tensor map can be encoded (the same conditions as a
  // load's), the tile goes through shared memory and one TMA store (cp.async.bulk.tensor)
  // issued by one thread; everywhere else, a masked store.
  template <class Row, class Col, class V, int R, int C>
  void store(const Row &row, const Col &col, const Block<V, R, C> &value) const
    requires(!std::is_const_v<T> && std::is_same_v<V, T>)
  {
    constexpr std::array<int, 0> scalar{};
    detail::emit_effect(OpKind::TileStore, {base_.id(), rows_.id(), cols_.id(), row_stride_.id(), detail::lift<i32, scalar>(row).id(),
                                             detail::lift<i32, scalar>(col).id(), value.id()});
  }

 private:
  Ptr<T> base_;
  Scalar<i32> rows_, cols_, row_stride_;
};

// A planes x rows x cols tensor of T at `base`: plane p starts plane_stride elements after
// plane p - 1, and each plane is a rows x cols tensor as above (row_stride apart, columns
// contiguous): attention's [head][position][d], a batch of matrices. A tile lies in one plane:
// load<R, C>(plane, row, col) reads the R x C tile at (row, col) of plane `plane`, and a plane
// outside [0, planes) reads zeros; store(plane, row, col, tile) writes one, skipping elements
// outside. On sm_90a the same conditions as a 2-D descriptor's (plane_stride too a multiple of
// 16 bytes) give 3-D TMA copies and stores of one plane's box; elsewhere masked loads and stores.
template <class T>
class TensorDescriptor3D {
 public:
  TensorDescriptor3D(const Ptr<T> &base, const Scalar<i32> &planes, const Scalar<i32> &rows, const Scalar<i32> &cols, const Scalar<i32> &plane_stride,
                     const Scalar<i32> &row_stride)
      : base_(base), planes_(planes), rows_(rows), cols_(cols), plane_stride_(plane_stride), row_stride_(row_stride) {}

  template <int R, int C, class Plane, class Row, class Col>
  Block<std::remove_const_t<T>, R, C> load(const Plane &plane, const Row &row, const Col &col) const {
    constexpr std::array<int, 0> scalar{};
    return detail::emit_as<Block<std::remove_const_t<T>, R, C>>(
        OpKind::TileLoad, {base_.id(), rows_.id(), cols_.id(), row_stride_.id(), detail::lift<i32, scalar>(row).id(), detail::lift<i32, scalar>(col).id(),
                           planes_.id(), plane_stride_.id(), detail::lift<i32, scalar>(plane).id()});
  }

  template <class Plane, class Row, class Col, class V, int R, int C>
  void store(const Plane &plane, const Row &row, const Col &col, const Block<V, R, C> &value) const
    requires(!std::is_const_v<T> && std::is_same_v<V, T>)
  {
    constexpr std::array<int, 0> scalar{};
    detail::emit_effect(OpKind::TileStore, {base_.id(), rows_.id(), cols_.id(), row_stride_.id(), detail::lift<i32, scalar>(row).id(),
                                             detail::lift<i32, scalar>(col).id(), value.id(), planes_.id(), plane_stride_.id(),
                                             detail::lift<i32, scalar>(plane).id()});
  }

 private:
  Ptr<T> base_;
  Scalar<i32> planes_, rows_, cols_, plane_stride_, row_stride_;
};

// make_tensor_descriptor(base, rows, cols, row_stride): integers may be literals.
template <class T, class Rows, class Cols, class Stride>
TensorDescriptor<T> make_tensor_descriptor(const Ptr<T> &base, const Rows &rows, const Cols &cols, const Stride &row_stride) {
  constexpr std::array<int, 0> scalar{};
  return TensorDescriptor<T>(base, detail::lift<i32, scalar>(rows), detail::lift<i32, scalar>(cols), detail::lift<i32, scalar>(row_stride));
}

// make_tensor_descriptor(base, planes, rows, cols, plane_stride, row_stride): a 3-D tensor.
template <class T, class Planes, class Rows, class Cols, class PlaneStride, class RowStride>
TensorDescriptor3D<T> make_tensor_descriptor(const Ptr<T> &base, const Planes &planes, const Rows &rows, const Cols &cols, const PlaneStride &plane_stride,
                                             const RowStride &row_stride) {
  constexpr std::array<int, 0> scalar{};
  return TensorDescriptor3D<T>(base, detail::lift<i32, scalar>(planes), detail::lift<i32, scalar>(rows), detail::lift<i32, scalar>(cols),
                               detail::lift<i32, scalar>(plane_stride), detail::lift<i32, scalar>(row_stride));
}

}  // namespace kdsl
