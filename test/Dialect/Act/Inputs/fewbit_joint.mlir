// Exported by python3 -m act.export test/Dialect/Act/Inputs/fewbit_model.py:factory --batch 2 (joint form)
func.func @factory_step(%p_a_weight: tensor<8x4xf32>, %p_a_bias: tensor<8xf32>, %p_b_weight: tensor<8x8xf32>, %p_b_bias: tensor<8xf32>, %p_c_weight: tensor<3x8xf32>, %p_c_bias: tensor<3xf32>, %inputs: tensor<2x4xf32>, %targets: tensor<2xi64>) -> (tensor<f32> {act.loss}, tensor<8x4xf32>, tensor<8xf32>, tensor<8x8xf32>, tensor<8xf32>, tensor<3x8xf32>, tensor<3xf32>) {
  %empty = tensor.empty() : tensor<4x8xf32>
  %t = linalg.transpose ins(%p_a_weight : tensor<8x4xf32>) outs(%empty : tensor<4x8xf32>) permutation = [1, 0]
  %cst = arith.constant 0.000000000e+00 : f32
  %empty_1 = tensor.empty() : tensor<2x8xf32>
  %fill = linalg.fill ins(%cst : f32) outs(%empty_1 : tensor<2x8xf32>) -> tensor<2x8xf32>
  %mm = linalg.matmul ins(%inputs, %t : tensor<2x4xf32>, tensor<4x8xf32>) outs(%fill : tensor<2x8xf32>) -> tensor<2x8xf32>
  %empty_2 = tensor.empty() : tensor<2x8xf32>
  %addmm = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%mm, %p_a_bias : tensor<2x8xf32>, tensor<8xf32>) outs(%empty_2 : tensor<2x8xf32>) {
  ^bb0(%a: f32, %a_1: f32, %o: f32):
    %t_1 = arith.addf %a, %a_1 : f32
    linalg.yield %t_1 : f32
  } -> tensor<2x8xf32>
  %empty_3 = tensor.empty() : tensor<2x8xf32>
  %cst_1 = arith.constant 5.000000000e-01 : f32
  %cst_2 = arith.constant 1.000000000e+00 : f32
  %cst_3 = arith.constant 7.071067812e-01 : f32
  %gelu = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%addmm : tensor<2x8xf32>) outs(%empty_3 : tensor<2x8xf32>) {
  ^bb0(%a_2: f32, %o_1: f32):
    %t_2 = arith.mulf %a_2, %cst_3 : f32
    %t_3 = math.erf %t_2 : f32
    %t_4 = arith.addf %cst_2, %t_3 : f32
    %t_5 = arith.mulf %cst_1, %t_4 : f32
    %t_6 = arith.mulf %a_2, %t_5 : f32
    linalg.yield %t_6 : f32
  } -> tensor<2x8xf32>
  %empty_4 = tensor.empty() : tensor<8x8xf32>
  %t_1_1 = linalg.transpose ins(%p_b_weight : tensor<8x8xf32>) outs(%empty_4 : tensor<8x8xf32>) permutation = [1, 0]
  %empty_5 = tensor.empty() : tensor<2x8xf32>
  %fill_1 = linalg.fill ins(%cst : f32) outs(%empty_5 : tensor<2x8xf32>) -> tensor<2x8xf32>
  %mm_1 = linalg.matmul ins(%gelu, %t_1_1 : tensor<2x8xf32>, tensor<8x8xf32>) outs(%fill_1 : tensor<2x8xf32>) -> tensor<2x8xf32>
  %empty_6 = tensor.empty() : tensor<2x8xf32>
  %addmm_1 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%mm_1, %p_b_bias : tensor<2x8xf32>, tensor<8xf32>) outs(%empty_6 : tensor<2x8xf32>) {
  ^bb0(%a_3: f32, %a_4: f32, %o_2: f32):
    %t_7 = arith.addf %a_3, %a_4 : f32
    linalg.yield %t_7 : f32
  } -> tensor<2x8xf32>
  %empty_7 = tensor.empty() : tensor<2x8xf32>
  %sigmoid = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%addmm_1 : tensor<2x8xf32>) outs(%empty_7 : tensor<2x8xf32>) {
  ^bb0(%a_5: f32, %o_3: f32):
    %t_8 = arith.negf %a_5 : f32
    %t_9 = math.exp %t_8 : f32
    %t_10 = arith.addf %cst_2, %t_9 : f32
    %t_11 = arith.divf %cst_2, %t_10 : f32
    linalg.yield %t_11 : f32
  } -> tensor<2x8xf32>
  %empty_8 = tensor.empty() : tensor<2x8xf32>
  %mul = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%addmm_1, %sigmoid : tensor<2x8xf32>, tensor<2x8xf32>) outs(%empty_8 : tensor<2x8xf32>) {
  ^bb0(%a_6: f32, %a_7: f32, %o_4: f32):
    %t_12 = arith.mulf %a_6, %a_7 : f32
    linalg.yield %t_12 : f32
  } -> tensor<2x8xf32>
  %empty_9 = tensor.empty() : tensor<8x3xf32>
  %t_2_1 = linalg.transpose ins(%p_c_weight : tensor<3x8xf32>) outs(%empty_9 : tensor<8x3xf32>) permutation = [1, 0]
  %empty_10 = tensor.empty() : tensor<2x3xf32>
  %fill_2 = linalg.fill ins(%cst : f32) outs(%empty_10 : tensor<2x3xf32>) -> tensor<2x3xf32>
  %mm_2 = linalg.matmul ins(%mul, %t_2_1 : tensor<2x8xf32>, tensor<8x3xf32>) outs(%fill_2 : tensor<2x3xf32>) -> tensor<2x3xf32>
  %empty_11 = tensor.empty() : tensor<2x3xf32>
  %addmm_2 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%mm_2, %p_c_bias : tensor<2x3xf32>, tensor<3xf32>) outs(%empty_11 : tensor<2x3xf32>) {
  ^bb0(%a_8: f32, %a_9: f32, %o_5: f32):
    %t_13 = arith.addf %a_8, %a_9 : f32
    linalg.yield %t_13 : f32
  } -> tensor<2x3xf32>
  %cst_4 = arith.constant 0xFF800000 : f32
  %empty_12 = tensor.empty() : tensor<2xf32>
  %fill_3 = linalg.fill ins(%cst_4 : f32) outs(%empty_12 : tensor<2xf32>) -> tensor<2xf32>
  %sum = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]} ins(%addmm_2 : tensor<2x3xf32>) outs(%fill_3 : tensor<2xf32>) {
  ^bb0(%a_10: f32, %o_6: f32):
    %t_14 = arith.maximumf %a_10, %o_6 : f32
    linalg.yield %t_14 : f32
  } -> tensor<2xf32>
  %view = tensor.expand_shape %sum [[0, 1]] output_shape [2, 1] : tensor<2xf32> into tensor<2x1xf32>
  %empty_13 = tensor.empty() : tensor<2x3xf32>
  %ew = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, 0)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%addmm_2, %view : tensor<2x3xf32>, tensor<2x1xf32>) outs(%empty_13 : tensor<2x3xf32>) {
  ^bb0(%a_11: f32, %a_12: f32, %o_7: f32):
    %t_15 = arith.subf %a_11, %a_12 : f32
    %t_16 = math.exp %t_15 : f32
    linalg.yield %t_16 : f32
  } -> tensor<2x3xf32>
  %empty_14 = tensor.empty() : tensor<2xf32>
  %fill_4 = linalg.fill ins(%cst : f32) outs(%empty_14 : tensor<2xf32>) -> tensor<2xf32>
  %sum_1 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]} ins(%ew : tensor<2x3xf32>) outs(%fill_4 : tensor<2xf32>) {
  ^bb0(%a_13: f32, %o_8: f32):
    %t_17 = arith.addf %a_13, %o_8 : f32
    linalg.yield %t_17 : f32
  } -> tensor<2xf32>
  %view_1 = tensor.expand_shape %sum_1 [[0, 1]] output_shape [2, 1] : tensor<2xf32> into tensor<2x1xf32>
  %empty_15 = tensor.empty() : tensor<2x3xf32>
  %_log_softmax = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, 0)>, affine_map<(d0, d1) -> (d0, 0)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%addmm_2, %view, %view_1 : tensor<2x3xf32>, tensor<2x1xf32>, tensor<2x1xf32>) outs(%empty_15 : tensor<2x3xf32>) {
  ^bb0(%a_14: f32, %a_15: f32, %a_16: f32, %o_9: f32):
    %t_18 = arith.subf %a_14, %a_15 : f32
    %t_19 = math.log %a_16 : f32
    %t_20 = arith.subf %t_18, %t_19 : f32
    linalg.yield %t_20 : f32
  } -> tensor<2x3xf32>
  %empty_16 = tensor.empty() : tensor<2xf32>
  %fill_5 = linalg.fill ins(%cst : f32) outs(%empty_16 : tensor<2xf32>) -> tensor<2xf32>
  %cst_5 = arith.constant -100 : i64
  %generic = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]} ins(%_log_softmax, %targets : tensor<2x3xf32>, tensor<2xi64>) outs(%fill_5 : tensor<2xf32>) {
  ^bb0(%a_17: f32, %a_18: i64, %o_10: f32):
    %i = linalg.index 1 : index
    %t_21 = arith.index_cast %i : index to i64
    %p = arith.cmpi eq, %t_21, %a_18 : i64
    %p_1 = arith.cmpi ne, %a_18, %cst_5 : i64
    %t_22 = arith.andi %p, %p_1 : i1
    %t_23 = arith.select %t_22, %a_17, %cst : f32
    %t_24 = arith.subf %o_10, %t_23 : f32
    linalg.yield %t_24 : f32
  } -> tensor<2xf32>
  %empty_17 = tensor.empty() : tensor<f32>
  %fill_6 = linalg.fill ins(%cst : f32) outs(%empty_17 : tensor<f32>) -> tensor<f32>
  %total_weight = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> ()>], iterator_types = ["reduction"]} ins(%targets : tensor<2xi64>) outs(%fill_6 : tensor<f32>) {
  ^bb0(%a_19: i64, %o_11: f32):
    %p_2 = arith.cmpi ne, %a_19, %cst_5 : i64
    %t_25 = arith.select %p_2, %cst_2, %cst : f32
    %t_26 = arith.addf %o_11, %t_25 : f32
    linalg.yield %t_26 : f32
  } -> tensor<f32>
  %empty_18 = tensor.empty() : tensor<f32>
  %fill_7 = linalg.fill ins(%cst : f32) outs(%empty_18 : tensor<f32>) -> tensor<f32>
  %sum_2 = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> ()>], iterator_types = ["reduction"]} ins(%generic : tensor<2xf32>) outs(%fill_7 : tensor<f32>) {
  ^bb0(%a_20: f32, %o_12: f32):
    %t_27 = arith.addf %a_20, %o_12 : f32
    linalg.yield %t_27 : f32
  } -> tensor<f32>
  %empty_19 = tensor.empty() : tensor<f32>
  %nll_loss_forward = linalg.generic {indexing_maps = [affine_map<() -> ()>, affine_map<() -> ()>, affine_map<() -> ()>], iterator_types = []} ins(%sum_2, %total_weight : tensor<f32>, tensor<f32>) outs(%empty_19 : tensor<f32>) {
  ^bb0(%a_21: f32, %a_22: f32, %o_13: f32):
    %t_28 = arith.divf %a_21, %a_22 : f32
    linalg.yield %t_28 : f32
  } -> tensor<f32>
  %empty_20 = tensor.empty() : tensor<8x8xf32>
  %t_1_2 = linalg.transpose ins(%p_b_weight : tensor<8x8xf32>) outs(%empty_20 : tensor<8x8xf32>) permutation = [1, 0]
  %empty_21 = tensor.empty() : tensor<8x3xf32>
  %t_2_2 = linalg.transpose ins(%p_c_weight : tensor<3x8xf32>) outs(%empty_21 : tensor<8x3xf32>) permutation = [1, 0]
  %empty_22 = tensor.empty() : tensor<f32>
  %tangent = linalg.fill ins(%cst_2 : f32) outs(%empty_22 : tensor<f32>) -> tensor<f32>
  %empty_23 = tensor.empty() : tensor<f32>
  %ew_1 = linalg.generic {indexing_maps = [affine_map<() -> ()>, affine_map<() -> ()>, affine_map<() -> ()>], iterator_types = []} ins(%tangent, %total_weight : tensor<f32>, tensor<f32>) outs(%empty_23 : tensor<f32>) {
  ^bb0(%a_23: f32, %a_24: f32, %o_14: f32):
    %t_29 = arith.divf %a_23, %a_24 : f32
    linalg.yield %t_29 : f32
  } -> tensor<f32>
  %empty_24 = tensor.empty() : tensor<2x3xf32>
  %nll_loss_backward = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> ()>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%targets, %ew_1 : tensor<2xi64>, tensor<f32>) outs(%empty_24 : tensor<2x3xf32>) {
  ^bb0(%a_25: i64, %a_26: f32, %o_15: f32):
    %i_1 = linalg.index 1 : index
    %t_30 = arith.index_cast %i_1 : index to i64
    %p_3 = arith.cmpi eq, %t_30, %a_25 : i64
    %p_4 = arith.cmpi ne, %a_25, %cst_5 : i64
    %t_31 = arith.andi %p_3, %p_4 : i1
    %t_32 = arith.negf %a_26 : f32
    %t_33 = arith.select %t_31, %t_32, %cst : f32
    linalg.yield %t_33 : f32
  } -> tensor<2x3xf32>
  %empty_25 = tensor.empty() : tensor<2xf32>
  %fill_8 = linalg.fill ins(%cst : f32) outs(%empty_25 : tensor<2xf32>) -> tensor<2xf32>
  %sum_3 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]} ins(%nll_loss_backward : tensor<2x3xf32>) outs(%fill_8 : tensor<2xf32>) {
  ^bb0(%a_27: f32, %o_16: f32):
    %t_34 = arith.addf %a_27, %o_16 : f32
    linalg.yield %t_34 : f32
  } -> tensor<2xf32>
  %view_2 = tensor.expand_shape %sum_3 [[0, 1]] output_shape [2, 1] : tensor<2xf32> into tensor<2x1xf32>
  %empty_26 = tensor.empty() : tensor<2x3xf32>
  %_log_softmax_backward_data = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, 0)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%nll_loss_backward, %_log_softmax, %view_2 : tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x1xf32>) outs(%empty_26 : tensor<2x3xf32>) {
  ^bb0(%a_28: f32, %a_29: f32, %a_30: f32, %o_17: f32):
    %t_35 = math.exp %a_29 : f32
    %t_36 = arith.mulf %t_35, %a_30 : f32
    %t_37 = arith.subf %a_28, %t_36 : f32
    linalg.yield %t_37 : f32
  } -> tensor<2x3xf32>
  %empty_27 = tensor.empty() : tensor<3x8xf32>
  %t_3_1 = linalg.transpose ins(%t_2_2 : tensor<8x3xf32>) outs(%empty_27 : tensor<3x8xf32>) permutation = [1, 0]
  %empty_28 = tensor.empty() : tensor<2x8xf32>
  %fill_9 = linalg.fill ins(%cst : f32) outs(%empty_28 : tensor<2x8xf32>) -> tensor<2x8xf32>
  %mm_3 = linalg.matmul ins(%_log_softmax_backward_data, %t_3_1 : tensor<2x3xf32>, tensor<3x8xf32>) outs(%fill_9 : tensor<2x8xf32>) -> tensor<2x8xf32>
  %empty_29 = tensor.empty() : tensor<3x2xf32>
  %t_4_1 = linalg.transpose ins(%_log_softmax_backward_data : tensor<2x3xf32>) outs(%empty_29 : tensor<3x2xf32>) permutation = [1, 0]
  %empty_30 = tensor.empty() : tensor<3x8xf32>
  %fill_10 = linalg.fill ins(%cst : f32) outs(%empty_30 : tensor<3x8xf32>) -> tensor<3x8xf32>
  %mm_1_1 = linalg.matmul ins(%t_4_1, %mul : tensor<3x2xf32>, tensor<2x8xf32>) outs(%fill_10 : tensor<3x8xf32>) -> tensor<3x8xf32>
  %empty_31 = tensor.empty() : tensor<8x3xf32>
  %t_5_1 = linalg.transpose ins(%mm_1_1 : tensor<3x8xf32>) outs(%empty_31 : tensor<8x3xf32>) permutation = [1, 0]
  %empty_32 = tensor.empty() : tensor<3xf32>
  %fill_11 = linalg.fill ins(%cst : f32) outs(%empty_32 : tensor<3xf32>) -> tensor<3xf32>
  %sum_1_1 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1)>], iterator_types = ["reduction", "parallel"]} ins(%_log_softmax_backward_data : tensor<2x3xf32>) outs(%fill_11 : tensor<3xf32>) {
  ^bb0(%a_31: f32, %o_18: f32):
    %t_38 = arith.addf %a_31, %o_18 : f32
    linalg.yield %t_38 : f32
  } -> tensor<3xf32>
  %view_3 = tensor.expand_shape %sum_1_1 [[0, 1]] output_shape [1, 3] : tensor<3xf32> into tensor<1x3xf32>
  %view_4 = tensor.collapse_shape %view_3 [[0, 1]] : tensor<1x3xf32> into tensor<3xf32>
  %empty_33 = tensor.empty() : tensor<3x8xf32>
  %t_6_1 = linalg.transpose ins(%t_5_1 : tensor<8x3xf32>) outs(%empty_33 : tensor<3x8xf32>) permutation = [1, 0]
  %empty_34 = tensor.empty() : tensor<2x8xf32>
  %sigmoid_1 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%addmm_1 : tensor<2x8xf32>) outs(%empty_34 : tensor<2x8xf32>) {
  ^bb0(%a_32: f32, %o_19: f32):
    %t_39 = arith.negf %a_32 : f32
    %t_40 = math.exp %t_39 : f32
    %t_41 = arith.addf %cst_2, %t_40 : f32
    %t_42 = arith.divf %cst_2, %t_41 : f32
    linalg.yield %t_42 : f32
  } -> tensor<2x8xf32>
  %empty_35 = tensor.empty() : tensor<2x8xf32>
  %empty_like = linalg.fill ins(%cst : f32) outs(%empty_35 : tensor<2x8xf32>) -> tensor<2x8xf32>
  %empty_36 = tensor.empty() : tensor<2x8xf32>
  %fill_12 = linalg.fill ins(%cst_2 : f32) outs(%empty_36 : tensor<2x8xf32>) -> tensor<2x8xf32>
  %empty_37 = tensor.empty() : tensor<2x8xf32>
  %sub = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%fill_12, %sigmoid_1 : tensor<2x8xf32>, tensor<2x8xf32>) outs(%empty_37 : tensor<2x8xf32>) {
  ^bb0(%a_33: f32, %a_34: f32, %o_20: f32):
    %t_43 = arith.subf %a_33, %a_34 : f32
    linalg.yield %t_43 : f32
  } -> tensor<2x8xf32>
  %empty_38 = tensor.empty() : tensor<2x8xf32>
  %mul_1 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%addmm_1, %sub : tensor<2x8xf32>, tensor<2x8xf32>) outs(%empty_38 : tensor<2x8xf32>) {
  ^bb0(%a_35: f32, %a_36: f32, %o_21: f32):
    %t_44 = arith.mulf %a_35, %a_36 : f32
    linalg.yield %t_44 : f32
  } -> tensor<2x8xf32>
  %empty_39 = tensor.empty() : tensor<2x8xf32>
  %add = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%mul_1 : tensor<2x8xf32>) outs(%empty_39 : tensor<2x8xf32>) {
  ^bb0(%a_37: f32, %o_22: f32):
    %t_45 = arith.addf %a_37, %cst_2 : f32
    linalg.yield %t_45 : f32
  } -> tensor<2x8xf32>
  %empty_40 = tensor.empty() : tensor<2x8xf32>
  %mul_2 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%sigmoid_1, %add : tensor<2x8xf32>, tensor<2x8xf32>) outs(%empty_40 : tensor<2x8xf32>) {
  ^bb0(%a_38: f32, %a_39: f32, %o_23: f32):
    %t_46 = arith.mulf %a_38, %a_39 : f32
    linalg.yield %t_46 : f32
  } -> tensor<2x8xf32>
  %empty_41 = tensor.empty() : tensor<2x8xf32>
  %mul_3 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%mm_3, %mul_2 : tensor<2x8xf32>, tensor<2x8xf32>) outs(%empty_41 : tensor<2x8xf32>) {
  ^bb0(%a_40: f32, %a_41: f32, %o_24: f32):
    %t_47 = arith.mulf %a_40, %a_41 : f32
    linalg.yield %t_47 : f32
  } -> tensor<2x8xf32>
  %empty_42 = tensor.empty() : tensor<8x8xf32>
  %t_7_1 = linalg.transpose ins(%t_1_2 : tensor<8x8xf32>) outs(%empty_42 : tensor<8x8xf32>) permutation = [1, 0]
  %empty_43 = tensor.empty() : tensor<2x8xf32>
  %fill_13 = linalg.fill ins(%cst : f32) outs(%empty_43 : tensor<2x8xf32>) -> tensor<2x8xf32>
  %mm_2_1 = linalg.matmul ins(%mul_3, %t_7_1 : tensor<2x8xf32>, tensor<8x8xf32>) outs(%fill_13 : tensor<2x8xf32>) -> tensor<2x8xf32>
  %empty_44 = tensor.empty() : tensor<8x2xf32>
  %t_8_1 = linalg.transpose ins(%mul_3 : tensor<2x8xf32>) outs(%empty_44 : tensor<8x2xf32>) permutation = [1, 0]
  %empty_45 = tensor.empty() : tensor<8x8xf32>
  %fill_14 = linalg.fill ins(%cst : f32) outs(%empty_45 : tensor<8x8xf32>) -> tensor<8x8xf32>
  %mm_3_1 = linalg.matmul ins(%t_8_1, %gelu : tensor<8x2xf32>, tensor<2x8xf32>) outs(%fill_14 : tensor<8x8xf32>) -> tensor<8x8xf32>
  %empty_46 = tensor.empty() : tensor<8x8xf32>
  %t_9_1 = linalg.transpose ins(%mm_3_1 : tensor<8x8xf32>) outs(%empty_46 : tensor<8x8xf32>) permutation = [1, 0]
  %empty_47 = tensor.empty() : tensor<8xf32>
  %fill_15 = linalg.fill ins(%cst : f32) outs(%empty_47 : tensor<8xf32>) -> tensor<8xf32>
  %sum_2_1 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1)>], iterator_types = ["reduction", "parallel"]} ins(%mul_3 : tensor<2x8xf32>) outs(%fill_15 : tensor<8xf32>) {
  ^bb0(%a_42: f32, %o_25: f32):
    %t_48 = arith.addf %a_42, %o_25 : f32
    linalg.yield %t_48 : f32
  } -> tensor<8xf32>
  %view_5 = tensor.expand_shape %sum_2_1 [[0, 1]] output_shape [1, 8] : tensor<8xf32> into tensor<1x8xf32>
  %view_1_1 = tensor.collapse_shape %view_5 [[0, 1]] : tensor<1x8xf32> into tensor<8xf32>
  %empty_48 = tensor.empty() : tensor<8x8xf32>
  %t_10_1 = linalg.transpose ins(%t_9_1 : tensor<8x8xf32>) outs(%empty_48 : tensor<8x8xf32>) permutation = [1, 0]
  %empty_49 = tensor.empty() : tensor<2x8xf32>
  %cst_6 = arith.constant -5.000000000e-01 : f32
  %cst_7 = arith.constant 3.989422804e-01 : f32
  %gelu_backward = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%mm_2_1, %addmm : tensor<2x8xf32>, tensor<2x8xf32>) outs(%empty_49 : tensor<2x8xf32>) {
  ^bb0(%a_43: f32, %a_44: f32, %o_26: f32):
    %t_49 = arith.mulf %a_44, %a_44 : f32
    %t_50 = arith.mulf %cst_6, %t_49 : f32
    %t_51 = math.exp %t_50 : f32
    %t_52 = arith.mulf %t_51, %cst_7 : f32
    %t_53 = arith.mulf %a_44, %cst_3 : f32
    %t_54 = math.erf %t_53 : f32
    %t_55 = arith.addf %cst_2, %t_54 : f32
    %t_56 = arith.mulf %cst_1, %t_55 : f32
    %t_57 = arith.mulf %a_44, %t_52 : f32
    %t_58 = arith.addf %t_56, %t_57 : f32
    %t_59 = arith.mulf %a_43, %t_58 : f32
    linalg.yield %t_59 : f32
  } -> tensor<2x8xf32>
  %empty_50 = tensor.empty() : tensor<8x2xf32>
  %t_11_1 = linalg.transpose ins(%gelu_backward : tensor<2x8xf32>) outs(%empty_50 : tensor<8x2xf32>) permutation = [1, 0]
  %empty_51 = tensor.empty() : tensor<8x4xf32>
  %fill_16 = linalg.fill ins(%cst : f32) outs(%empty_51 : tensor<8x4xf32>) -> tensor<8x4xf32>
  %mm_4 = linalg.matmul ins(%t_11_1, %inputs : tensor<8x2xf32>, tensor<2x4xf32>) outs(%fill_16 : tensor<8x4xf32>) -> tensor<8x4xf32>
  %empty_52 = tensor.empty() : tensor<4x8xf32>
  %t_12_1 = linalg.transpose ins(%mm_4 : tensor<8x4xf32>) outs(%empty_52 : tensor<4x8xf32>) permutation = [1, 0]
  %empty_53 = tensor.empty() : tensor<8xf32>
  %fill_17 = linalg.fill ins(%cst : f32) outs(%empty_53 : tensor<8xf32>) -> tensor<8xf32>
  %sum_3_1 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1)>], iterator_types = ["reduction", "parallel"]} ins(%gelu_backward : tensor<2x8xf32>) outs(%fill_17 : tensor<8xf32>) {
  ^bb0(%a_45: f32, %o_27: f32):
    %t_60 = arith.addf %a_45, %o_27 : f32
    linalg.yield %t_60 : f32
  } -> tensor<8xf32>
  %view_6 = tensor.expand_shape %sum_3_1 [[0, 1]] output_shape [1, 8] : tensor<8xf32> into tensor<1x8xf32>
  %view_2_1 = tensor.collapse_shape %view_6 [[0, 1]] : tensor<1x8xf32> into tensor<8xf32>
  %empty_54 = tensor.empty() : tensor<8x4xf32>
  %t_13_1 = linalg.transpose ins(%t_12_1 : tensor<4x8xf32>) outs(%empty_54 : tensor<8x4xf32>) permutation = [1, 0]
  return %nll_loss_forward, %t_13_1, %view_2_1, %t_10_1, %view_1_1, %t_6_1, %view_4 : tensor<f32>, tensor<8x4xf32>, tensor<8xf32>, tensor<8x8xf32>, tensor<8xf32>, tensor<3x8xf32>, tensor<3xf32>
}
