// SPDX-License-Identifier: Apache-2.0
// cml/optim.h: optimizers as graph builders, with their state as explicit values.
//
// Each step builder adds to a function the ops of one optimizer step: it takes the parameters,
// their gradients (cml/autodiff.h) and the optimizer state as values, and writes the updated
// parameters and state as new values. The caller threads the state through: make it
// parameters of the training step's function and return the new state, so one executable runs
// one step and the host (or a While loop) feeds the outputs back in.
//
// Example (one Adam step on weights w with loss l):
//
//   cml_value_t g;
//   CML_RETURN_IF_ERROR(cml_gradients(f, l, &w, 1, &g));
//   cml_adam_config_t ac;
//   cml_adam_config_init(&ac);                               // lr 1e-3, betas 0.9 / 0.999
//   cml_value_t w2, m2, v2;
//   CML_RETURN_IF_ERROR(cml_optim_adam_step(f, &ac, &w, &g, &m, &v, 1, step, &w2, &m2, &v2));
//   // return {l, w2, m2, v2}; m and v start as zeros, step as 1 and grows by 1 per step.
//
// Every builder checks that each parameter, gradient and state value has the same dims and a
// float dtype, and fails with INVALID_ARGUMENT naming the optimizer, the index and the shapes
// otherwise; the error also sticks to the builder (as op errors do), and every output is
// written as CML_VALUE_INVALID. Arithmetic is in the parameter's dtype, except for parameters
// of 16 bits or fewer (Float16, BFloat16, the Float8 types): those compute in Float32 and each
// output is rounded once to its own dtype (in BFloat16, beta2 = 0.999 would round to 1 and
// epsilon 1e-8 to 0 in Float16). A gradient or state value has the parameter's dtype or the one
// the step computes in (Float32 moments for BFloat16 weights, as mixed-precision training keeps
// them). Keep Adam's moments in Float32 for 16-bit parameters: a Float16 v underflows to 0 for
// gradients below about 1e-2 (0.001 g^2 < 6e-8) and the bias-corrected update then grows far past
// the learning rate, and a BFloat16 v stalls (v + 0.001 g^2 rounds back to v), so both are
// accepted but train wrongly. Hyper-parameters are constants of the graph, except a learning
// rate given as a value to the *_with_learning_rate steps (for schedules). Hyper-parameters are
// folded into the graph as constants of that dtype; one that does not survive the rounding (a
// learning rate of 1e300 or 1e-50, a beta of 0.99999999 in Float32) is INVALID_ARGUMENT.
//
// Thread-safety: as every builder (cml/graph.h): one thread at a time per builder.
#ifndef CML_OPTIM_H_
#define CML_OPTIM_H_

#include "cml/graph.h"

#ifdef __cplusplus
extern "C" {
#endif

// SGD with optional (Nesterov) momentum and L2 weight decay (PyTorch's formulation):
//   g' = g + weight_decay * p
//   v' = momentum * v + g'                        (momentum > 0)
//   p' = p - lr * (nesterov ? g' + momentum * v' : v')     (p - lr * g' without momentum)
typedef struct cml_sgd_config_t {
  double learning_rate;  // > 0
  double momentum;       // >= 0; 0: no velocity state
  bool nesterov;         // needs momentum > 0
  double weight_decay;   // >= 0
} cml_sgd_config_t;

// learning_rate 0.01, no momentum, no weight decay.
CML_API void cml_sgd_config_init(cml_sgd_config_t* config);

// One SGD step on |count| parameters. |velocity| / |out_velocity| hold the momentum state and
// may be NULL when momentum is 0 (they are then ignored). Returns INVALID_ARGUMENT for bad
// hyper-parameters, NULL arrays or mismatched shapes (see above).
CML_API CML_MUST_USE cml_status_t
cml_optim_sgd_step(cml_function_t* f, const cml_sgd_config_t* config, const cml_value_t* params,
                   const cml_value_t* grads, const cml_value_t* velocity, size_t count,
                   cml_value_t* out_params, cml_value_t* out_velocity);

// Adam and AdamW, with bias correction (t is the step number, 1 for the first step):
//   g' = g + weight_decay * p                      (Adam: L2 decay, when !decoupled)
//   m' = beta1 m + (1 - beta1) g'      v' = beta2 v + (1 - beta2) g'^2
//   u  = (m' / (1 - beta1^t)) / (sqrt(v' / (1 - beta2^t)) + epsilon)
//   p' = p - lr * u                                (Adam)
//   p' = p - lr * (u + weight_decay * p)           (AdamW: decoupled weight decay)
typedef struct cml_adam_config_t {
  double learning_rate;  // > 0
  double beta1, beta2;   // in [0, 1)
  double epsilon;        // > 0
  double weight_decay;   // >= 0
  bool decoupled;        // true: AdamW
} cml_adam_config_t;

// learning_rate 1e-3, beta1 0.9, beta2 0.999, epsilon 1e-8, no weight decay, not decoupled.
CML_API void cml_adam_config_init(cml_adam_config_t* config);
// As cml_adam_config_init, then AdamW's weight_decay 0.01 and decoupled.
CML_API void cml_adamw_config_init(cml_adam_config_t* config);

// One Adam(W) step. |m| and |v| are the first and second moment state (zeros initially);
// |step| is a scalar value of any integer or float dtype holding t (>= 1). Writes the updated
// parameters and moments. Returns INVALID_ARGUMENT as above (also for a non-scalar |step|).
CML_API CML_MUST_USE cml_status_t cml_optim_adam_step(
    cml_function_t* f, const cml_adam_config_t* config, const cml_value_t* params,
    const cml_value_t* grads, const cml_value_t* m, const cml_value_t* v, size_t count,
    cml_value_t step, cml_value_t* out_params, cml_value_t* out_m, cml_value_t* out_v);

// The same steps with the learning rate given as a value instead of config->learning_rate
// (which is then ignored): a scalar of any float or integer dtype, e.g. a parameter of the
// training step's function, so that a schedule (warm-up from 0, cosine decay) changes it at every
// execute without compiling again. It is converted to the dtype each parameter computes in; 0 is
// allowed (no update), and its value is not checked. Other errors as the steps above; a learning
// rate that is not such a scalar is INVALID_ARGUMENT.
CML_API CML_MUST_USE cml_status_t cml_optim_sgd_step_with_learning_rate(
    cml_function_t* f, const cml_sgd_config_t* config, cml_value_t learning_rate,
    const cml_value_t* params, const cml_value_t* grads, const cml_value_t* velocity, size_t count,
    cml_value_t* out_params, cml_value_t* out_velocity);
CML_API CML_MUST_USE cml_status_t cml_optim_adam_step_with_learning_rate(
    cml_function_t* f, const cml_adam_config_t* config, cml_value_t learning_rate,
    const cml_value_t* params, const cml_value_t* grads, const cml_value_t* m, const cml_value_t* v,
    size_t count, cml_value_t step, cml_value_t* out_params, cml_value_t* out_m,
    cml_value_t* out_v);

// Gradient clipping by global norm: norm = sqrt(sum_i sum(grads[i]^2)) (computed in the widest
// of the gradients' dtypes, Float32 for 16 bits or fewer, and written in the first gradient's
// dtype; as in other libraries, a sum of squares past the computing dtype's range is inf, which
// zeroes every gradient, so clip Float32 gradients of 1e19 or more in Float64),
// and each gradient is scaled by max_norm / max(norm, max_norm) (unchanged
// when norm <= max_norm). Writes the clipped gradients and, when |out_norm| is not NULL, the
// norm (a scalar). |max_norm| > 0. Gradients may differ in shape; they must be float.
CML_API CML_MUST_USE cml_status_t cml_optim_clip_by_global_norm(cml_function_t* f,
                                                                const cml_value_t* grads,
                                                                size_t count, double max_norm,
                                                                cml_value_t* out_grads,
                                                                cml_value_t* out_norm);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // CML_OPTIM_H_
