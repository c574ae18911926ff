// RUN: frame-opt %s -p arith-expand | filecheck %s

// floordivsi / ceildivsi (what lower-affine makes of `floordiv`) become divsi,
// remsi and a select that moves the quotient by one when rounding was toward zero
// on the wrong side.

func.func @div(%a: index, %b: index) -> (index, index) {
  %f = arith.floordivsi %a, %b : index
  %c = arith.ceildivsi %a, %b : index
  func.return %f, %c : index, index
}

// CHECK-LABEL: func.func @div(
// CHECK-SAME:    %[[A:[a-z0-9_]+]]: index, %[[B:[a-z0-9_]+]]: index)
// CHECK-NOT:     floordivsi
// CHECK:         %[[Q:.*]] = arith.divsi %[[A]], %[[B]] : index
// CHECK-NEXT:    %[[R:.*]] = arith.remsi %[[A]], %[[B]] : index
// CHECK-NEXT:    %[[INEXACT:.*]] = arith.cmpi ne, %[[R]], %{{.*}} : index
// CHECK-NEXT:    %[[RNEG:.*]] = arith.cmpi slt, %[[R]], %{{.*}} : index
// CHECK-NEXT:    %[[BNEG:.*]] = arith.cmpi slt, %[[B]], %{{.*}} : index
// CHECK-NEXT:    %[[DIFF:.*]] = arith.cmpi ne, %[[RNEG]], %[[BNEG]] : i1
// CHECK-NEXT:    %[[ADJ:.*]] = arith.andi %[[INEXACT]], %[[DIFF]] : i1
// CHECK-NEXT:    %[[QM1:.*]] = arith.subi %[[Q]], %{{.*}} : index
// CHECK-NEXT:    %[[F:.*]] = arith.select %[[ADJ]], %[[QM1]], %[[Q]] : index
// CHECK-NOT:     ceildivsi
// CHECK:         %[[SAME:.*]] = arith.cmpi eq, %{{.*}}, %{{.*}} : i1
// CHECK:         %[[QP1:.*]] = arith.addi %{{.*}}, %{{.*}} : index
// CHECK-NEXT:    %[[C:.*]] = arith.select %{{.*}}, %[[QP1]], %{{.*}} : index
// CHECK-NEXT:    func.return %[[F]], %[[C]] : index, index
