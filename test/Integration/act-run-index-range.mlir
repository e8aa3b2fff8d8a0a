// Integer data an op indexes with (token ids, class targets) is checked
// against its act.index_range before the step runs: a clear error naming
// the value, its position and its use, not a read outside the tensor.
// act-run's random integers are in [-2, 2], so -1 and -2 occur.
// RUN: not act-run %s --entry=pick 2>&1 | FileCheck %s --check-prefix=RANGE
// RANGE: act-run: error: argument 1 holds -{{[12]}} at element {{[0-9]}}, outside [0, 4): ids indexes the 4 rows of w
// RUN: not act-run %s --entry=ignored --init=int 2>&1 | FileCheck %s --check-prefix=IGNORE
// IGNORE: act-run: error: argument 1 holds -{{[12]}} at element {{[0-9]}}, outside [0, 4) (or 2)
// An attribute without its bounds.
// RUN: not act-run %s --entry=malformed 2>&1 | FileCheck %s --check-prefix=MALFORMED
// MALFORMED: act-run: error: argument 1: act.index_range needs integer 'lower' and 'upper' entries
// A range that holds the data: the step runs.
// RUN: act-run %s --entry=wide --init=int | FileCheck %s --check-prefix=WIDE
// WIDE: results: 1

func.func @pick(%w: tensor<4x3xf32>, %ids: tensor<5xi64> {act.index_range = {lower = 0 : i64, upper = 4 : i64, use = "ids indexes the 4 rows of w"}}) -> tensor<5x3xf32> {
  %r = call @gather(%w, %ids) : (tensor<4x3xf32>, tensor<5xi64>) -> tensor<5x3xf32>
  return %r : tensor<5x3xf32>
}

func.func @ignored(%w: tensor<4x3xf32>, %ids: tensor<5xi64> {act.index_range = {lower = 0 : i64, upper = 4 : i64, ignore = 2 : i64}}) -> tensor<5x3xf32> {
  %r = call @gather(%w, %ids) : (tensor<4x3xf32>, tensor<5xi64>) -> tensor<5x3xf32>
  return %r : tensor<5x3xf32>
}

func.func @malformed(%w: tensor<4x3xf32>, %ids: tensor<5xi64> {act.index_range = {lower = 0 : i64}}) -> tensor<5x3xf32> {
  %r = call @gather(%w, %ids) : (tensor<4x3xf32>, tensor<5xi64>) -> tensor<5x3xf32>
  return %r : tensor<5x3xf32>
}

// Rows -2..2 of a 5-row table read from its middle (ids + 2).
func.func @wide(%w: tensor<5x3xf32>, %ids: tensor<5xi64> {act.index_range = {lower = -2 : i64, upper = 3 : i64}}) -> tensor<5x3xf32> {
  %c2 = arith.constant dense<2> : tensor<5xi64>
  %e = tensor.empty() : tensor<5xi64>
  %shifted = linalg.add ins(%ids, %c2 : tensor<5xi64>, tensor<5xi64>) outs(%e : tensor<5xi64>) -> tensor<5xi64>
  %r = call @gather5(%w, %shifted) : (tensor<5x3xf32>, tensor<5xi64>) -> tensor<5x3xf32>
  return %r : tensor<5x3xf32>
}

func.func private @gather(%w: tensor<4x3xf32>, %ids: tensor<5xi64>) -> tensor<5x3xf32> {
  %e = tensor.empty() : tensor<5x3xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%ids : tensor<5xi64>) outs(%e : tensor<5x3xf32>) {
  ^bb0(%i: i64, %o: f32):
    %k = arith.index_cast %i : i64 to index
    %j = linalg.index 1 : index
    %v = tensor.extract %w[%k, %j] : tensor<4x3xf32>
    linalg.yield %v : f32
  } -> tensor<5x3xf32>
  return %r : tensor<5x3xf32>
}

func.func private @gather5(%w: tensor<5x3xf32>, %ids: tensor<5xi64>) -> tensor<5x3xf32> {
  %e = tensor.empty() : tensor<5x3xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%ids : tensor<5xi64>) outs(%e : tensor<5x3xf32>) {
  ^bb0(%i: i64, %o: f32):
    %k = arith.index_cast %i : i64 to index
    %j = linalg.index 1 : index
    %v = tensor.extract %w[%k, %j] : tensor<5x3xf32>
    linalg.yield %v : f32
  } -> tensor<5x3xf32>
  return %r : tensor<5x3xf32>
}
