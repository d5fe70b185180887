// Turns @main's kiln_cpu string ops into calls of the context's string kernels; literals become constant globals.
//
// A string value is an i128: bits 0-63 the data pointer, bits 64-127 the byte size (the
// little-endian image of kiln_abi_string). The kernels take and return the two halves as
// separate pointer and i64 values, and a returned kiln_abi_string is the LLVM struct {ptr, i64},
// exactly what a C compiler passes for them on x86-64, so no i128 crosses the call boundary.
#include "passes/host/Passes.h"
#include "passes/host/RuntimeContext.h"

#include "dialects/cpu/IR/Cpu.h"

namespace kiln {
#define GEN_PASS_DEF_LOWERSTRINGOPSPASS
#include "passes/host/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace kiln {
namespace {

// The context's string kernels (runtime/include/kiln/abi.h).
enum : int32_t {
  kFromFloat = ctxfield::kStringFromFloat,
  kToFloat = ctxfield::kStringToFloat,
  kChangeCase = ctxfield::kStringChangeCase,
  kEqual = ctxfield::kStringEqual
};

struct Lowering {
  OpBuilder &b;
  Location loc;
  Value context;

  Type i64() { return b.getI64Type(); }
  Type i128() { return b.getIntegerType(128); }
  Type ptr() { return LLVM::LLVMPointerType::get(b.getContext()); }
  Value i64Const(int64_t v) { return LLVM::ConstantOp::create(b, loc, i64(), b.getI64IntegerAttr(v)); }
  Value i32Const(int32_t v) { return LLVM::ConstantOp::create(b, loc, b.getI32Type(), b.getI32IntegerAttr(v)); }

  Value dataOf(Value s) { return LLVM::IntToPtrOp::create(b, loc, ptr(), LLVM::TruncOp::create(b, loc, i64(), s).getResult()); }
  Value sizeOf(Value s) {
    Value shift = LLVM::ConstantOp::create(b, loc, i128(), b.getIntegerAttr(i128(), 64));
    return LLVM::TruncOp::create(b, loc, i64(), LLVM::LShrOp::create(b, loc, s, shift));
  }
  Value pack(Value data, Value size) {
    Value lo = LLVM::ZExtOp::create(b, loc, i128(), LLVM::PtrToIntOp::create(b, loc, i64(), data));
    Value shift = LLVM::ConstantOp::create(b, loc, i128(), b.getIntegerAttr(i128(), 64));
    Value hi = LLVM::ShlOp::create(b, loc, LLVM::ZExtOp::create(b, loc, i128(), size), shift);
    return LLVM::OrOp::create(b, loc, lo, hi);
  }
  /// ctx->field(ctx->runtime, args...).
  Value call(int32_t field, Type result, ArrayRef<Value> args) {
    SmallVector<Value> operands = {contextField(b, loc, context, field), contextField(b, loc, context, ctxfield::kRuntime)};
    operands.append(args.begin(), args.end());
    SmallVector<Type> types = {ptr()};
    for (Value a : args)
      types.push_back(a.getType());
    auto fnType = LLVM::LLVMFunctionType::get(result, types);
    return LLVM::CallOp::create(b, loc, fnType, operands).getResult();
  }
  Type stringStruct() { return LLVM::LLVMStructType::getLiteral(b.getContext(), {ptr(), i64()}); }
  Value unpackStruct(Value st) {
    return pack(LLVM::ExtractValueOp::create(b, loc, st, ArrayRef<int64_t>{0}),
                LLVM::ExtractValueOp::create(b, loc, st, ArrayRef<int64_t>{1}));
  }
};

struct LowerStringOpsPass : impl::LowerStringOpsPassBase<LowerStringOpsPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto func = module.lookupSymbol<func::FuncOp>("main");
    if (!func)
      return;
    SmallVector<Operation *> ops;
    func.walk([&](Operation *op) {
      if (isa<cpu::StringLiteralOp, cpu::StringFromFloatOp, cpu::StringToFloatOp, cpu::StringChangeCaseOp,
              cpu::StringEqualOp>(op))
        ops.push_back(op);
    });
    if (ops.empty())
      return;
    if (func.getNumArguments() == 0 || !func.getArgAttr(0, abi::kContextArg)) {
      ops[0]->emitError("expected @main's runtime context (kiln-add-runtime-context)");
      return signalPassFailure();
    }
    // Each literal's bytes once, as a private constant global (in the artifact's code section).
    llvm::StringMap<LLVM::GlobalOp> globals;
    OpBuilder mb = OpBuilder::atBlockBegin(module.getBody());
    auto globalFor = [&](StringRef text, Location loc) {
      auto it = globals.find(text);
      if (it != globals.end())
        return it->second;
      auto type = LLVM::LLVMArrayType::get(mb.getI8Type(), text.size());
      auto g = LLVM::GlobalOp::create(mb, loc, type, /*isConstant=*/true, LLVM::Linkage::Private,
                                      "kiln_string_" + std::to_string(globals.size()), mb.getStringAttr(text));
      globals[text] = g;
      return g;
    };
    for (Operation *op : ops) {
      OpBuilder b(op);
      Lowering l{b, op->getLoc(), func.getArgument(0)};
      Value replacement;
      if (auto lit = dyn_cast<cpu::StringLiteralOp>(op)) {
        StringRef text = lit.getValue();
        if (text.empty()) {
          replacement = LLVM::ConstantOp::create(b, l.loc, l.i128(), b.getIntegerAttr(l.i128(), 0));
        } else {
          LLVM::GlobalOp g = globalFor(text, l.loc);
          Value address = LLVM::AddressOfOp::create(b, l.loc, g);
          replacement = l.pack(address, l.i64Const(text.size()));
        }
      } else if (auto from = dyn_cast<cpu::StringFromFloatOp>(op)) {
        Value v = from.getValue();
        int32_t bits = v.getType().getIntOrFloatBitWidth();
        if (bits != 64)
          v = LLVM::FPExtOp::create(b, l.loc, b.getF64Type(), v);
        replacement = l.unpackStruct(l.call(kFromFloat, l.stringStruct(), {v, l.i32Const(bits)}));
      } else if (auto to = dyn_cast<cpu::StringToFloatOp>(op)) {
        Value s = to.getValue();
        int32_t bits = to.getType().getIntOrFloatBitWidth();
        replacement = l.call(kToFloat, b.getF64Type(), {l.dataOf(s), l.sizeOf(s), l.i32Const(bits)});
        if (bits != 64) // exact: the runtime parsed it at this precision
          replacement = LLVM::FPTruncOp::create(b, l.loc, to.getType(), replacement);
      } else if (auto cc = dyn_cast<cpu::StringChangeCaseOp>(op)) {
        Value s = cc.getValue();
        replacement = l.unpackStruct(
            l.call(kChangeCase, l.stringStruct(), {l.dataOf(s), l.sizeOf(s), l.i32Const(cc.getUpper() ? 1 : 0)}));
      } else if (auto eq = dyn_cast<cpu::StringEqualOp>(op)) {
        Value x = eq.getLhs(), y = eq.getRhs();
        Value r = l.call(kEqual, b.getI32Type(),
                         {l.dataOf(x), l.sizeOf(x), l.dataOf(y), l.sizeOf(y), l.i32Const(eq.getIgnoreCase() ? 1 : 0)});
        replacement = LLVM::ICmpOp::create(b, l.loc, LLVM::ICmpPredicate::ne, r, l.i32Const(0));
      }
      op->getResult(0).replaceAllUsesWith(replacement);
      op->erase();
    }
  }
};

} // namespace
} // namespace kiln
