// RUN: frame-opt %s -p convert-cf-to-llvm | filecheck %s

// A counted loop as convert-scf-to-cf emits it: the index block argument becomes i64,
// and its users, not yet converted, read it through a cast.
func.func @loop(%n: index, %buf: memref<4xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  cf.br ^header(%c0, %buf : index, memref<4xf32>)
^header(%i: index, %m: memref<4xf32>):
  %more = arith.cmpi slt, %i, %n : index
  cf.cond_br %more, ^body, ^exit
^body:
  %next = arith.addi %i, %c1 : index
  cf.br ^header(%next, %m : index, memref<4xf32>)
^exit:
  func.return
}

// CHECK-LABEL: func.func @loop
// CHECK-SAME:    (%[[N:.*]]: index, %[[BUF:.*]]: memref<4xf32>)
// CHECK:         %[[C0:.*]] = arith.constant 0 : index
// CHECK:         %[[C1:.*]] = arith.constant 1 : index
// CHECK:         %[[C0_64:.*]] = builtin.unrealized_conversion_cast %[[C0]] : index to i64
// CHECK:         %[[BUF_P:.*]] = builtin.unrealized_conversion_cast %[[BUF]] : memref<4xf32> to !llvm.ptr
// CHECK:         llvm.br ^[[HEADER:[a-z0-9_]+]](%[[C0_64]], %[[BUF_P]] : i64, !llvm.ptr)
// CHECK:       ^[[HEADER]](%[[I:.*]]: i64, %[[M:.*]]: !llvm.ptr):
// CHECK:         %[[I_IDX:.*]] = builtin.unrealized_conversion_cast %[[I]] : i64 to index
// CHECK-NOT:     memref<4xf32>
// CHECK:         %[[MORE:.*]] = arith.cmpi slt, %[[I_IDX]], %[[N]] : index
// CHECK:         llvm.cond_br %[[MORE]], ^[[BODY:[a-z0-9_]+]], ^[[EXIT:[a-z0-9_]+]]
// CHECK:       ^[[BODY]]:
// CHECK:         %[[NEXT:.*]] = arith.addi %[[I_IDX]], %[[C1]] : index
// CHECK:         %[[NEXT_64:.*]] = builtin.unrealized_conversion_cast %[[NEXT]] : index to i64
// CHECK:         llvm.br ^[[HEADER]](%[[NEXT_64]], %[[M]] : i64, !llvm.ptr)
// CHECK:       ^[[EXIT]]:
// CHECK:         func.return

// Branch operands that already come from a cast to the target type reuse its input.
func.func @diamond(%c: i1, %x: i64, %y: i64) -> index {
  %xi = builtin.unrealized_conversion_cast %x : i64 to index
  %yi = builtin.unrealized_conversion_cast %y : i64 to index
  cf.cond_br %c, ^join(%xi : index), ^join(%yi : index)
^join(%r: index):
  func.return %r : index
}

// CHECK-LABEL: func.func @diamond
// CHECK-SAME:    (%[[C:.*]]: i1, %[[X:.*]]: i64, %[[Y:.*]]: i64)
// CHECK:         llvm.cond_br %[[C]], ^[[JOIN:[a-z0-9_]+]](%[[X]] : i64), ^[[JOIN]](%[[Y]] : i64)
// CHECK:       ^[[JOIN]](%[[R:.*]]: i64):
// CHECK:         %[[RI:.*]] = builtin.unrealized_conversion_cast %[[R]] : i64 to index
// CHECK:         func.return %[[RI]] : index
