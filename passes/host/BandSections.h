// Which half of a banded convolution chain an op belongs to, carried in its location.
//
// kiln-band-conv-chains splits a chain into row bands; with an even number of bands, the upper
// half of the bands is section 0 and the lower half section 1. kiln-run-band-sections later
// runs the chain as one launch of two work items (one per section, each running its bands'
// kernels in order), so that on two threads each core computes, and keeps in its cache, its own
// half of the map. kiln-plan-memory reads the same tag to keep the two sections' buffers apart,
// since they are live at the same time once the sections run side by side.
//
// The tag is a FusedLoc whose metadata is {kiln.band_chain = C, kiln.band_section = S}: it
// survives the rewrites that keep or fuse an op's location, and adds no NameLoc, so profiles
// and reports still name only the ONNX nodes.
#ifndef KILN_PASSES_HOST_BANDSECTIONS_H
#define KILN_PASSES_HOST_BANDSECTIONS_H

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Location.h"

#include <cstdint>
#include <optional>

namespace kiln {

struct BandSection {
  int64_t chain = 0;
  int64_t section = 0;
  bool operator==(const BandSection &o) const { return chain == o.chain && section == o.section; }
};

inline mlir::Location tagBandSection(mlir::Location loc, BandSection tag) {
  mlir::Builder b(loc.getContext());
  auto meta = b.getDictionaryAttr({b.getNamedAttr("kiln.band_chain", b.getI64IntegerAttr(tag.chain)),
                                   b.getNamedAttr("kiln.band_section", b.getI64IntegerAttr(tag.section))});
  return mlir::FusedLoc::get(loc.getContext(), {loc}, meta);
}

/// What a location says about band sections.
struct BandSectionOf {
  std::optional<BandSection> tag; // the one tag found
  bool mixed = false;             // two different tags: the op spans sections
};

inline BandSectionOf bandSectionOf(mlir::Location loc) {
  BandSectionOf out;
  loc->walk([&](mlir::Location l) {
    auto fused = mlir::dyn_cast<mlir::FusedLoc>(l);
    auto meta = fused ? mlir::dyn_cast_or_null<mlir::DictionaryAttr>(fused.getMetadata()) : nullptr;
    auto chain = meta ? meta.getAs<mlir::IntegerAttr>("kiln.band_chain") : nullptr;
    auto section = meta ? meta.getAs<mlir::IntegerAttr>("kiln.band_section") : nullptr;
    if (!chain || !section)
      return mlir::WalkResult::advance();
    BandSection tag{chain.getInt(), section.getInt()};
    if (out.tag && !(*out.tag == tag))
      out.mixed = true;
    out.tag = tag;
    return mlir::WalkResult::advance();
  });
  return out;
}

} // namespace kiln

#endif
