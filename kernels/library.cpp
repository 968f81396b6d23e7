// library.cpp - Library: construction and the kernel registry shared by the dispatch files
#include "kernels/library_impl.h"

namespace kdsl::kernels {

Library::Library(const Device &device) : impl_(std::make_unique<Impl>(device)) {}
Library::~Library() = default;

}  // namespace kdsl::kernels
