// Exported by python3 -m act.export test/Dialect/Act/Inputs/fewbit_model.py:factory --batch 2 (split form)
func.func @factory_forward(%p_a_weight: tensor<8x4xf32>, %p_a_bias: tensor<8xf32>, %p_b_weight: tensor<8x8xf32>, %p_b_bias: tensor<8xf32>, %p_c_weight: tensor<3x8xf32>, %p_c_bias: tensor<3xf32>, %inputs: tensor<2x4xf32>, %targets: tensor<2xi64>) -> (tensor<f32> {act.loss}, tensor<2x4xf32>, tensor<2xi64>, tensor<2x8xf32>, tensor<2x8xf32>, tensor<8x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>, tensor<3x8xf32>, tensor<2x3xf32>, tensor<f32>) attributes {act.backward = @factory_backward, act.num_saved = 10 : i64} {
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
  return %nll_loss_forward, %inputs, %targets, %addmm, %gelu, %p_b_weight, %addmm_1, %mul, %p_c_weight, %_log_softmax, %total_weight : tensor<f32>, tensor<2x4xf32>, tensor<2xi64>, tensor<2x8xf32>, tensor<2x8xf32>, tensor<8x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>, tensor<3x8xf32>, tensor<2x3xf32>, tensor<f32>
}

func.func @factory_backward(%saved0: tensor<2x4xf32>, %saved1: tensor<2xi64>, %saved2: tensor<2x8xf32>, %saved3: tensor<2x8xf32>, %saved4: tensor<8x8xf32>, %saved5: tensor<2x8xf32>, %saved6: tensor<2x8xf32>, %saved7: tensor<3x8xf32>, %saved8: tensor<2x3xf32>, %saved9: tensor<f32>, %tangent: tensor<f32>) -> (tensor<8x4xf32>, tensor<8xf32>, tensor<8x8xf32>, tensor<8xf32>, tensor<3x8xf32>, tensor<3xf32>) {
  %empty = tensor.empty() : tensor<8x8xf32>
  %t_1 = linalg.transpose ins(%saved4 : tensor<8x8xf32>) outs(%empty : tensor<8x8xf32>) permutation = [1, 0]
  %empty_1 = tensor.empty() : tensor<8x3xf32>
  %t_2 = linalg.transpose ins(%saved7 : tensor<3x8xf32>) outs(%empty_1 : tensor<8x3xf32>) permutation = [1, 0]
  %empty_2 = tensor.empty() : tensor<f32>
  %ew = linalg.generic {indexing_maps = [affine_map<() -> ()>, affine_map<() -> ()>, affine_map<() -> ()>], iterator_types = []} ins(%tangent, %saved9 : tensor<f32>, tensor<f32>) outs(%empty_2 : tensor<f32>) {
  ^bb0(%a: f32, %a_1: f32, %o: f32):
    %t = arith.divf %a, %a_1 : f32
    linalg.yield %t : f32
  } -> tensor<f32>
  %empty_3 = tensor.empty() : tensor<2x3xf32>
  %cst = arith.constant -100 : i64
  %cst_1 = arith.constant 0.000000000e+00 : f32
  %nll_loss_backward = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> ()>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%saved1, %ew : tensor<2xi64>, tensor<f32>) outs(%empty_3 : tensor<2x3xf32>) {
  ^bb0(%a_2: i64, %a_3: f32, %o_1: f32):
    %i = linalg.index 1 : index
    %t_3 = arith.index_cast %i : index to i64
    %p = arith.cmpi eq, %t_3, %a_2 : i64
    %p_1 = arith.cmpi ne, %a_2, %cst : i64
    %t_4 = arith.andi %p, %p_1 : i1
    %t_5 = arith.negf %a_3 : f32
    %t_6 = arith.select %t_4, %t_5, %cst_1 : f32
    linalg.yield %t_6 : f32
  } -> tensor<2x3xf32>
  %empty_4 = tensor.empty() : tensor<2xf32>
  %fill = linalg.fill ins(%cst_1 : f32) outs(%empty_4 : tensor<2xf32>) -> tensor<2xf32>
  %sum = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]} ins(%nll_loss_backward : tensor<2x3xf32>) outs(%fill : tensor<2xf32>) {
  ^bb0(%a_4: f32, %o_2: f32):
    %t_7 = arith.addf %a_4, %o_2 : f32
    linalg.yield %t_7 : f32
  } -> tensor<2xf32>
  %view = tensor.expand_shape %sum [[0, 1]] output_shape [2, 1] : tensor<2xf32> into tensor<2x1xf32>
  %empty_5 = tensor.empty() : tensor<2x3xf32>
  %_log_softmax_backward_data = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, 0)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%nll_loss_backward, %saved8, %view : tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x1xf32>) outs(%empty_5 : tensor<2x3xf32>) {
  ^bb0(%a_5: f32, %a_6: f32, %a_7: f32, %o_3: f32):
    %t_8 = math.exp %a_6 : f32
    %t_9 = arith.mulf %t_8, %a_7 : f32
    %t_10 = arith.subf %a_5, %t_9 : f32
    linalg.yield %t_10 : f32
  } -> tensor<2x3xf32>
  %empty_6 = tensor.empty() : tensor<3x8xf32>
  %t_3_1 = linalg.transpose ins(%t_2 : tensor<8x3xf32>) outs(%empty_6 : tensor<3x8xf32>) permutation = [1, 0]
  %empty_7 = tensor.empty() : tensor<2x8xf32>
  %fill_1 = linalg.fill ins(%cst_1 : f32) outs(%empty_7 : tensor<2x8xf32>) -> tensor<2x8xf32>
  %mm = linalg.matmul ins(%_log_softmax_backward_data, %t_3_1 : tensor<2x3xf32>, tensor<3x8xf32>) outs(%fill_1 : tensor<2x8xf32>) -> tensor<2x8xf32>
  %empty_8 = tensor.empty() : tensor<3x2xf32>
  %t_4_1 = linalg.transpose ins(%_log_softmax_backward_data : tensor<2x3xf32>) outs(%empty_8 : tensor<3x2xf32>) permutation = [1, 0]
  %empty_9 = tensor.empty() : tensor<3x8xf32>
  %fill_2 = linalg.fill ins(%cst_1 : f32) outs(%empty_9 : tensor<3x8xf32>) -> tensor<3x8xf32>
  %mm_1 = linalg.matmul ins(%t_4_1, %saved6 : tensor<3x2xf32>, tensor<2x8xf32>) outs(%fill_2 : tensor<3x8xf32>) -> tensor<3x8xf32>
  %empty_10 = tensor.empty() : tensor<8x3xf32>
  %t_5_1 = linalg.transpose ins(%mm_1 : tensor<3x8xf32>) outs(%empty_10 : tensor<8x3xf32>) permutation = [1, 0]
  %empty_11 = tensor.empty() : tensor<3xf32>
  %fill_3 = linalg.fill ins(%cst_1 : f32) outs(%empty_11 : tensor<3xf32>) -> tensor<3xf32>
  %sum_1 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1)>], iterator_types = ["reduction", "parallel"]} ins(%_log_softmax_backward_data : tensor<2x3xf32>) outs(%fill_3 : tensor<3xf32>) {
  ^bb0(%a_8: f32, %o_4: f32):
    %t_11 = arith.addf %a_8, %o_4 : f32
    linalg.yield %t_11 : f32
  } -> tensor<3xf32>
  %view_1 = tensor.expand_shape %sum_1 [[0, 1]] output_shape [1, 3] : tensor<3xf32> into tensor<1x3xf32>
  %view_2 = tensor.collapse_shape %view_1 [[0, 1]] : tensor<1x3xf32> into tensor<3xf32>
  %empty_12 = tensor.empty() : tensor<3x8xf32>
  %t_6_1 = linalg.transpose ins(%t_5_1 : tensor<8x3xf32>) outs(%empty_12 : tensor<3x8xf32>) permutation = [1, 0]
  %empty_13 = tensor.empty() : tensor<2x8xf32>
  %cst_2 = arith.constant 1.000000000e+00 : f32
  %sigmoid_1 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%saved5 : tensor<2x8xf32>) outs(%empty_13 : tensor<2x8xf32>) {
  ^bb0(%a_9: f32, %o_5: f32):
    %t_12 = arith.negf %a_9 : f32
    %t_13 = math.exp %t_12 : f32
    %t_14 = arith.addf %cst_2, %t_13 : f32
    %t_15 = arith.divf %cst_2, %t_14 : f32
    linalg.yield %t_15 : f32
  } -> tensor<2x8xf32>
  %empty_14 = tensor.empty() : tensor<2x8xf32>
  %empty_like = linalg.fill ins(%cst_1 : f32) outs(%empty_14 : tensor<2x8xf32>) -> tensor<2x8xf32>
  %empty_15 = tensor.empty() : tensor<2x8xf32>
  %fill_4 = linalg.fill ins(%cst_2 : f32) outs(%empty_15 : tensor<2x8xf32>) -> tensor<2x8xf32>
  %empty_16 = tensor.empty() : tensor<2x8xf32>
  %sub = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%fill_4, %sigmoid_1 : tensor<2x8xf32>, tensor<2x8xf32>) outs(%empty_16 : tensor<2x8xf32>) {
  ^bb0(%a_10: f32, %a_11: f32, %o_6: f32):
    %t_16 = arith.subf %a_10, %a_11 : f32
    linalg.yield %t_16 : f32
  } -> tensor<2x8xf32>
  %empty_17 = tensor.empty() : tensor<2x8xf32>
  %mul_1 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%saved5, %sub : tensor<2x8xf32>, tensor<2x8xf32>) outs(%empty_17 : tensor<2x8xf32>) {
  ^bb0(%a_12: f32, %a_13: f32, %o_7: f32):
    %t_17 = arith.mulf %a_12, %a_13 : f32
    linalg.yield %t_17 : f32
  } -> tensor<2x8xf32>
  %empty_18 = tensor.empty() : tensor<2x8xf32>
  %add = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%mul_1 : tensor<2x8xf32>) outs(%empty_18 : tensor<2x8xf32>) {
  ^bb0(%a_14: f32, %o_8: f32):
    %t_18 = arith.addf %a_14, %cst_2 : f32
    linalg.yield %t_18 : f32
  } -> tensor<2x8xf32>
  %empty_19 = tensor.empty() : tensor<2x8xf32>
  %mul_2 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%sigmoid_1, %add : tensor<2x8xf32>, tensor<2x8xf32>) outs(%empty_19 : tensor<2x8xf32>) {
  ^bb0(%a_15: f32, %a_16: f32, %o_9: f32):
    %t_19 = arith.mulf %a_15, %a_16 : f32
    linalg.yield %t_19 : f32
  } -> tensor<2x8xf32>
  %empty_20 = tensor.empty() : tensor<2x8xf32>
  %mul_3 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%mm, %mul_2 : tensor<2x8xf32>, tensor<2x8xf32>) outs(%empty_20 : tensor<2x8xf32>) {
  ^bb0(%a_17: f32, %a_18: f32, %o_10: f32):
    %t_20 = arith.mulf %a_17, %a_18 : f32
    linalg.yield %t_20 : f32
  } -> tensor<2x8xf32>
  %empty_21 = tensor.empty() : tensor<8x8xf32>
  %t_7_1 = linalg.transpose ins(%t_1 : tensor<8x8xf32>) outs(%empty_21 : tensor<8x8xf32>) permutation = [1, 0]
  %empty_22 = tensor.empty() : tensor<2x8xf32>
  %fill_5 = linalg.fill ins(%cst_1 : f32) outs(%empty_22 : tensor<2x8xf32>) -> tensor<2x8xf32>
  %mm_2 = linalg.matmul ins(%mul_3, %t_7_1 : tensor<2x8xf32>, tensor<8x8xf32>) outs(%fill_5 : tensor<2x8xf32>) -> tensor<2x8xf32>
  %empty_23 = tensor.empty() : tensor<8x2xf32>
  %t_8_1 = linalg.transpose ins(%mul_3 : tensor<2x8xf32>) outs(%empty_23 : tensor<8x2xf32>) permutation = [1, 0]
  %empty_24 = tensor.empty() : tensor<8x8xf32>
  %fill_6 = linalg.fill ins(%cst_1 : f32) outs(%empty_24 : tensor<8x8xf32>) -> tensor<8x8xf32>
  %mm_3 = linalg.matmul ins(%t_8_1, %saved3 : tensor<8x2xf32>, tensor<2x8xf32>) outs(%fill_6 : tensor<8x8xf32>) -> tensor<8x8xf32>
  %empty_25 = tensor.empty() : tensor<8x8xf32>
  %t_9_1 = linalg.transpose ins(%mm_3 : tensor<8x8xf32>) outs(%empty_25 : tensor<8x8xf32>) permutation = [1, 0]
  %empty_26 = tensor.empty() : tensor<8xf32>
  %fill_7 = linalg.fill ins(%cst_1 : f32) outs(%empty_26 : tensor<8xf32>) -> tensor<8xf32>
  %sum_2 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1)>], iterator_types = ["reduction", "parallel"]} ins(%mul_3 : tensor<2x8xf32>) outs(%fill_7 : tensor<8xf32>) {
  ^bb0(%a_19: f32, %o_11: f32):
    %t_21 = arith.addf %a_19, %o_11 : f32
    linalg.yield %t_21 : f32
  } -> tensor<8xf32>
  %view_3 = tensor.expand_shape %sum_2 [[0, 1]] output_shape [1, 8] : tensor<8xf32> into tensor<1x8xf32>
  %view_1_1 = tensor.collapse_shape %view_3 [[0, 1]] : tensor<1x8xf32> into tensor<8xf32>
  %empty_27 = tensor.empty() : tensor<8x8xf32>
  %t_10_1 = linalg.transpose ins(%t_9_1 : tensor<8x8xf32>) outs(%empty_27 : tensor<8x8xf32>) permutation = [1, 0]
  %empty_28 = tensor.empty() : tensor<2x8xf32>
  %cst_3 = arith.constant -5.000000000e-01 : f32
  %cst_4 = arith.constant 3.989422804e-01 : f32
  %cst_5 = arith.constant 5.000000000e-01 : f32
  %cst_6 = arith.constant 7.071067812e-01 : f32
  %gelu_backward = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%mm_2, %saved2 : tensor<2x8xf32>, tensor<2x8xf32>) outs(%empty_28 : tensor<2x8xf32>) {
  ^bb0(%a_20: f32, %a_21: f32, %o_12: f32):
    %t_22 = arith.mulf %a_21, %a_21 : f32
    %t_23 = arith.mulf %cst_3, %t_22 : f32
    %t_24 = math.exp %t_23 : f32
    %t_25 = arith.mulf %t_24, %cst_4 : f32
    %t_26 = arith.mulf %a_21, %cst_6 : f32
    %t_27 = math.erf %t_26 : f32
    %t_28 = arith.addf %cst_2, %t_27 : f32
    %t_29 = arith.mulf %cst_5, %t_28 : f32
    %t_30 = arith.mulf %a_21, %t_25 : f32
    %t_31 = arith.addf %t_29, %t_30 : f32
    %t_32 = arith.mulf %a_20, %t_31 : f32
    linalg.yield %t_32 : f32
  } -> tensor<2x8xf32>
  %empty_29 = tensor.empty() : tensor<8x2xf32>
  %t_11_1 = linalg.transpose ins(%gelu_backward : tensor<2x8xf32>) outs(%empty_29 : tensor<8x2xf32>) permutation = [1, 0]
  %empty_30 = tensor.empty() : tensor<8x4xf32>
  %fill_8 = linalg.fill ins(%cst_1 : f32) outs(%empty_30 : tensor<8x4xf32>) -> tensor<8x4xf32>
  %mm_4 = linalg.matmul ins(%t_11_1, %saved0 : tensor<8x2xf32>, tensor<2x4xf32>) outs(%fill_8 : tensor<8x4xf32>) -> tensor<8x4xf32>
  %empty_31 = tensor.empty() : tensor<4x8xf32>
  %t_12_1 = linalg.transpose ins(%mm_4 : tensor<8x4xf32>) outs(%empty_31 : tensor<4x8xf32>) permutation = [1, 0]
  %empty_32 = tensor.empty() : tensor<8xf32>
  %fill_9 = linalg.fill ins(%cst_1 : f32) outs(%empty_32 : tensor<8xf32>) -> tensor<8xf32>
  %sum_3 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1)>], iterator_types = ["reduction", "parallel"]} ins(%gelu_backward : tensor<2x8xf32>) outs(%fill_9 : tensor<8xf32>) {
  ^bb0(%a_22: f32, %o_13: f32):
    %t_33 = arith.addf %a_22, %o_13 : f32
    linalg.yield %t_33 : f32
  } -> tensor<8xf32>
  %view_4 = tensor.expand_shape %sum_3 [[0, 1]] output_shape [1, 8] : tensor<8xf32> into tensor<1x8xf32>
  %view_2_1 = tensor.collapse_shape %view_4 [[0, 1]] : tensor<1x8xf32> into tensor<8xf32>
  %empty_33 = tensor.empty() : tensor<8x4xf32>
  %t_13_1 = linalg.transpose ins(%t_12_1 : tensor<4x8xf32>) outs(%empty_33 : tensor<8x4xf32>) permutation = [1, 0]
  return %t_13_1, %view_2_1, %t_10_1, %view_1_1, %t_6_1, %view_2 : tensor<8x4xf32>, tensor<8xf32>, tensor<8x8xf32>, tensor<8xf32>, tensor<3x8xf32>, tensor<3xf32>
}
