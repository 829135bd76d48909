// SPDX-License-Identifier: Apache-2.0
// src/core/optim.c: optimizer step builders (SGD with momentum/Nesterov, Adam, AdamW) and
// gradient clipping by global norm, as graph ops on explicit state values (cml/optim.h).
#include <math.h>
#include <stdio.h>

#include "builder_internal.h"
#include "cml/optim.h"

void cml_sgd_config_init(cml_sgd_config_t* config) {
  if (!config) return;
  config->learning_rate = 0.01;
  config->momentum = 0.0;
  config->nesterov = false;
  config->weight_decay = 0.0;
}

void cml_adam_config_init(cml_adam_config_t* config) {
  if (!config) return;
  config->learning_rate = 1e-3;
  config->beta1 = 0.9;
  config->beta2 = 0.999;
  config->epsilon = 1e-8;
  config->weight_decay = 0.0;
  config->decoupled = false;
}

void cml_adamw_config_init(cml_adam_config_t* config) {
  if (!config) return;
  cml_adam_config_init(config);
  config->weight_decay = 0.01;
  config->decoupled = true;
}

// Records |st| in the builder (sticky) and returns the builder's first error.
static cml_status_t cml_optim_fail(cml_function_t* f, cml_status_t st) {
  if (!f || !f->builder) return st;
  cml__fail_status(f->builder, st);
  return cml_builder_status(f->builder);
}

static void cml_optim_clear(cml_value_t* out, size_t count) {
  if (!out) return;
  for (size_t i = 0; i < count; ++i) out[i] = CML_VALUE_INVALID;
}

// The dtype a step computes in for parameters of |dtype|: Float32 for floats of 16 bits or
// fewer (in BFloat16, beta2 = 0.999 rounds to 1 and the bias correction to 0; in Float16,
// epsilon 1e-8 rounds to 0 and g^2 overflows past 256), else |dtype|.
static cml_dtype_t cml_optim_compute_dtype(cml_dtype_t dtype) {
  return cml_dtype_bits(dtype) < 32 ? CML_DTYPE_F32 : dtype;
}

// |v| as |dtype|.
static cml_value_t cml_optim_as(cml_function_t* f, cml_value_t v, cml_dtype_t dtype) {
  cml_shape_t s;
  cml_builder_value_shape(f->builder, v, &s);
  return s.dtype == dtype ? v : cml_op_convert_dtype(f, v, dtype);
}

// Why |v| has no shape in |f|'s builder, for messages.
static const char* cml_optim_why_invalid(const cml_function_t* f, cml_value_t v) {
  if (v == CML_VALUE_INVALID) return "is CML_VALUE_INVALID";
  if ((v >> CML__VALUE_INDEX_BITS) != f->builder->tag) return "belongs to another builder";
  return "is unknown";
}

// Checks that |v| (|what|, shape |s|) is a value of |f| or of an ancestor of |f|: a value of
// another function would fail inside the step's first op, naming that op and sticking.
static cml_status_t cml_optim_scope(cml_function_t* f, const char* name, const char* what,
                                    cml_value_t v, const cml_shape_t* s) {
  char owner[160], label[160], text[CML__SHAPE_TEXT];
  if (cml__value_in_scope(f, v, owner, sizeof owner)) return CML_OK;
  return cml_status_make(CML_STATUS_INVALID_ARGUMENT,
                         "%s: %s %s was produced in %s, which is neither %s nor one of its "
                         "ancestors (the step's ops go into %s)",
                         name, what, cml__shape_text(s, text), owner,
                         cml__function_label(f, label, sizeof label), label);
}

// Checks |v| (|what| #i) against the parameter's shape |ps|: the same dims, and the
// parameter's dtype or the dtype the step computes in.
static cml_status_t cml_optim_check(cml_function_t* f, const char* name, const char* what, size_t i,
                                    cml_value_t v, const cml_shape_t* ps) {
  cml_shape_t s;
  char a[CML__SHAPE_TEXT], b[CML__SHAPE_TEXT];
  if (!cml_builder_value_shape(f->builder, v, &s)) {
    return cml_status_make(CML_STATUS_INVALID_ARGUMENT, "%s: %s #%zu (value id 0x%08x) %s", name,
                           what, i, (unsigned)v, cml_optim_why_invalid(f, v));
  }
  char numbered[64];
  snprintf(numbered, sizeof numbered, "%s #%zu", what, i);
  CML_RETURN_IF_ERROR(cml_optim_scope(f, name, numbered, v, &s));
  if (!(CML_DTYPE_BIT(s.dtype) & CML_DSET_FLOAT)) {
    return cml_status_make(CML_STATUS_INVALID_ARGUMENT, "%s: %s #%zu %s must have a float dtype",
                           name, what, i, cml__shape_text(&s, a));
  }
  if (ps && (!cml_shape_dims_equal(&s, ps) ||
             (s.dtype != ps->dtype && s.dtype != cml_optim_compute_dtype(ps->dtype)))) {
    return cml_status_make(CML_STATUS_INVALID_ARGUMENT,
                           "%s: %s #%zu %s does not match parameter #%zu %s (the same dims, and "
                           "its dtype or %s)",
                           name, what, i, cml__shape_text(&s, a), i, cml__shape_text(ps, b),
                           cml_dtype_name(cml_optim_compute_dtype(ps->dtype)));
  }
  return CML_OK;
}

// Whether a step can be added to |f| at all: a NULL function, a pending builder error, a
// compiled builder or a function that has returned. Not sticky (as cml_gradients): the module
// is left as it was, and stays compilable when it was complete.
static cml_status_t cml_optim_usable(cml_function_t* f, const char* name) {
  if (!f || !f->builder) {
    return cml_status_make(CML_STATUS_INVALID_ARGUMENT, "%s: NULL function", name);
  }
  if (f->builder->error != CML_OK) return cml_builder_status(f->builder);
  if (f->builder->compiled || f->returned) {
    return cml_status_make(CML_STATUS_FAILED_PRECONDITION, "%s: %s", name,
                           f->builder->compiled ? "the builder was already compiled"
                                                : "the function has already returned");
  }
  return CML_OK;
}

static cml_status_t cml_optim_begin(cml_function_t* f, const char* name, const void* config,
                                    const cml_value_t* params, const cml_value_t* grads,
                                    size_t count) {
  if (!config || (count > 0 && (!params || !grads))) {
    return cml_status_make(CML_STATUS_INVALID_ARGUMENT, "%s: NULL config, params or grads", name);
  }
  for (size_t i = 0; i < count; ++i) {
    CML_RETURN_IF_ERROR(cml_optim_check(f, name, "parameter", i, params[i], NULL));
    cml_shape_t ps;
    cml_builder_value_shape(f->builder, params[i], &ps);
    CML_RETURN_IF_ERROR(cml_optim_check(f, name, "gradient", i, grads[i], &ps));
  }
  return CML_OK;
}

static cml_value_t cml_optim_scalar(cml_function_t* f, cml_value_t like, double value) {
  cml_shape_t s;
  cml_builder_value_shape(f->builder, like, &s);
  return cml_constant_scalar_f64(f, s.dtype, value);
}

// Checks that the hyper-parameters |values| (named by |names|, |count| of them) survive as
// constants of each parameter's compute dtype: finite, and a positive one not rounded to 0
// (a learning rate of 1e300 is inf in Float32, 1e-50 is 0); |below_one| (a beta) must stay
// below 1 (0.99999999 is 1 in Float32).
static cml_status_t cml_optim_check_constants(cml_function_t* f, const char* name,
                                              const cml_value_t* params, size_t count,
                                              const double* values, const char* const* names,
                                              size_t value_count, const bool* below_one) {
  for (size_t i = 0; i < count; ++i) {
    cml_shape_t ps;
    cml_builder_value_shape(f->builder, params[i], &ps);
    if (cml_optim_compute_dtype(ps.dtype) != CML_DTYPE_F32) continue;
    for (size_t k = 0; k < value_count; ++k) {
      const float x = (float)values[k];
      if (isfinite(x) && (values[k] == 0 || x != 0) && (!below_one[k] || x < 1)) continue;
      return cml_status_make(CML_STATUS_INVALID_ARGUMENT,
                             "%s: %s %.17g is %.9g as a Float32 constant (parameter #%zu is "
                             "%s, computed in Float32)",
                             name, names[k], values[k], (double)x, i, cml_dtype_name(ps.dtype));
    }
  }
  return CML_OK;
}

// Finishes a step: returns the builder's error (outputs cleared) or CML_OK.
static cml_status_t cml_optim_end(cml_function_t* f, cml_value_t* const* outs, size_t out_count,
                                  size_t count) {
  if (f->builder->error == CML_OK) return CML_OK;
  for (size_t k = 0; k < out_count; ++k) cml_optim_clear(outs[k], count);
  return cml_builder_status(f->builder);
}

// Checks a learning rate given as a value: a scalar of a float or integer dtype of |f|.
static cml_status_t cml_optim_check_lr(cml_function_t* f, const char* name, cml_value_t lr) {
  cml_shape_t s;
  char text[CML__SHAPE_TEXT];
  if (!cml_builder_value_shape(f->builder, lr, &s)) {
    return cml_status_make(CML_STATUS_INVALID_ARGUMENT, "%s: learning_rate (value id 0x%08x) %s",
                           name, (unsigned)lr, cml_optim_why_invalid(f, lr));
  }
  CML_RETURN_IF_ERROR(cml_optim_scope(f, name, "learning_rate", lr, &s));
  if (s.rank != 0 || !(CML_DTYPE_BIT(s.dtype) & (CML_DSET_INT | CML_DSET_FLOAT))) {
    return cml_status_make(CML_STATUS_INVALID_ARGUMENT,
                           "%s: learning_rate %s must be a scalar of an integer or float dtype",
                           name, cml__shape_text(&s, text));
  }
  return CML_OK;
}

// The learning rate of a step in |dt|: the value |lr| when it is given, else the constant.
static cml_value_t cml_optim_lr(cml_function_t* f, cml_value_t lr, cml_value_t like, double value,
                                cml_dtype_t dt) {
  return lr != CML_VALUE_INVALID ? cml_optim_as(f, lr, dt) : cml_optim_scalar(f, like, value);
}

static cml_status_t cml_optim_sgd(cml_function_t* f, const cml_sgd_config_t* config, cml_value_t lr,
                                  bool lr_given, const cml_value_t* params,
                                  const cml_value_t* grads, const cml_value_t* velocity,
                                  size_t count, cml_value_t* out_params,
                                  cml_value_t* out_velocity) {
  static const char* name = "SGD";
  cml_optim_clear(out_params, count);
  cml_optim_clear(out_velocity, count);
  CML_RETURN_IF_ERROR(cml_optim_usable(f, name));
  cml_status_t st = cml_optim_begin(f, name, config, params, grads, count);
  if (st == CML_OK && lr_given) st = cml_optim_check_lr(f, name, lr);
  if (st == CML_OK && !out_params && count > 0) {
    st = cml_status_make(CML_STATUS_INVALID_ARGUMENT, "%s: NULL out_params", name);
  }
  if (st == CML_OK) {
    const cml_sgd_config_t* c = config;
    const char* bad = !lr_given && (!(c->learning_rate > 0) || !isfinite(c->learning_rate))
                          ? "learning_rate must be finite and > 0"
                      : !(c->momentum >= 0) || !isfinite(c->momentum)
                          ? "momentum must be finite and >= 0"
                      : !(c->weight_decay >= 0) || !isfinite(c->weight_decay)
                          ? "weight_decay must be finite and >= 0"
                      : c->nesterov && c->momentum <= 0 ? "nesterov needs momentum > 0"
                                                        : NULL;
    if (bad) {
      st = cml_status_make(CML_STATUS_INVALID_ARGUMENT,
                           "%s: %s (learning_rate %g, momentum %g, weight_decay %g, nesterov %d)",
                           name, bad, c->learning_rate, c->momentum, c->weight_decay,
                           (int)c->nesterov);
    } else if (c->momentum > 0 && count > 0 && (!velocity || !out_velocity)) {
      st = cml_status_make(CML_STATUS_INVALID_ARGUMENT,
                           "%s: momentum %g needs velocity and out_velocity", name, c->momentum);
    }
  }
  for (size_t i = 0; st == CML_OK && i < count && config->momentum > 0; ++i) {
    cml_shape_t ps;
    cml_builder_value_shape(f->builder, params[i], &ps);
    st = cml_optim_check(f, name, "velocity", i, velocity[i], &ps);
  }
  if (st == CML_OK) {
    const double values[3] = {config->momentum, config->weight_decay, config->learning_rate};
    static const char* const names[3] = {"momentum", "weight_decay", "learning_rate"};
    static const bool below_one[3] = {false, false, false};
    st = cml_optim_check_constants(f, name, params, count, values, names, lr_given ? 2 : 3,
                                   below_one);
  }
  if (st != CML_OK) return cml_optim_fail(f, st);
  const cml_sgd_config_t* c = config;
  for (size_t i = 0; i < count; ++i) {
    cml_shape_t ps;
    cml_builder_value_shape(f->builder, params[i], &ps);
    const cml_dtype_t dt = cml_optim_compute_dtype(ps.dtype);
    cml_value_t p = cml_optim_as(f, params[i], dt), g = cml_optim_as(f, grads[i], dt);
    if (c->weight_decay > 0) {
      g = cml_op_add(f, g, cml_op_mul(f, p, cml_optim_scalar(f, p, c->weight_decay)));
    }
    cml_value_t step = g;
    if (c->momentum > 0) {
      cml_value_t mu = cml_optim_scalar(f, p, c->momentum);
      cml_value_t v = cml_op_add(f, cml_op_mul(f, cml_optim_as(f, velocity[i], dt), mu), g);
      cml_shape_t vs;
      cml_builder_value_shape(f->builder, velocity[i], &vs);
      out_velocity[i] = cml_optim_as(f, v, vs.dtype);
      step = c->nesterov ? cml_op_add(f, g, cml_op_mul(f, v, mu)) : v;
    }
    out_params[i] = cml_optim_as(
        f, cml_op_sub(f, p, cml_op_mul(f, step, cml_optim_lr(f, lr, p, c->learning_rate, dt))),
        ps.dtype);
  }
  cml_value_t* outs[2] = {out_params, c->momentum > 0 ? out_velocity : NULL};
  return cml_optim_end(f, outs, 2, count);
}

cml_status_t cml_optim_sgd_step(cml_function_t* f, const cml_sgd_config_t* config,
                                const cml_value_t* params, const cml_value_t* grads,
                                const cml_value_t* velocity, size_t count, cml_value_t* out_params,
                                cml_value_t* out_velocity) {
  return cml_optim_sgd(f, config, CML_VALUE_INVALID, false, params, grads, velocity, count,
                       out_params, out_velocity);
}

cml_status_t cml_optim_sgd_step_with_learning_rate(
    cml_function_t* f, const cml_sgd_config_t* config, cml_value_t learning_rate,
    const cml_value_t* params, const cml_value_t* grads, const cml_value_t* velocity, size_t count,
    cml_value_t* out_params, cml_value_t* out_velocity) {
  return cml_optim_sgd(f, config, learning_rate, true, params, grads, velocity, count, out_params,
                       out_velocity);
}

static cml_status_t cml_optim_adam(cml_function_t* f, const cml_adam_config_t* config,
                                   cml_value_t lr, bool lr_given, const cml_value_t* params,
                                   const cml_value_t* grads, const cml_value_t* m,
                                   const cml_value_t* v, size_t count, cml_value_t step,
                                   cml_value_t* out_params, cml_value_t* out_m,
                                   cml_value_t* out_v) {
  const char* name = config && config->decoupled ? "AdamW" : "Adam";
  cml_optim_clear(out_params, count);
  cml_optim_clear(out_m, count);
  cml_optim_clear(out_v, count);
  CML_RETURN_IF_ERROR(cml_optim_usable(f, name));
  cml_status_t st = cml_optim_begin(f, name, config, params, grads, count);
  if (st == CML_OK && lr_given) st = cml_optim_check_lr(f, name, lr);
  if (st == CML_OK && count > 0 && (!m || !v || !out_params || !out_m || !out_v)) {
    st = cml_status_make(CML_STATUS_INVALID_ARGUMENT, "%s: NULL state or output arrays", name);
  }
  if (st == CML_OK) {
    const cml_adam_config_t* c = config;
    const char* bad = !lr_given && (!(c->learning_rate > 0) || !isfinite(c->learning_rate))
                          ? "learning_rate must be finite and > 0"
                      : !(c->beta1 >= 0) || !(c->beta1 < 1) ? "beta1 must be in [0, 1)"
                      : !(c->beta2 >= 0) || !(c->beta2 < 1) ? "beta2 must be in [0, 1)"
                      : !(c->epsilon > 0) || !isfinite(c->epsilon)
                          ? "epsilon must be finite and > 0"
                      : !(c->weight_decay >= 0) || !isfinite(c->weight_decay)
                          ? "weight_decay must be finite and >= 0"
                          : NULL;
    if (bad) {
      st = cml_status_make(CML_STATUS_INVALID_ARGUMENT,
                           "%s: %s (learning_rate %g, beta1 %g, beta2 %g, epsilon %g, "
                           "weight_decay %g)",
                           name, bad, c->learning_rate, c->beta1, c->beta2, c->epsilon,
                           c->weight_decay);
    }
  }
  cml_shape_t ss;
  if (st == CML_OK) {
    if (!cml_builder_value_shape(f->builder, step, &ss) || ss.rank != 0 ||
        !(CML_DTYPE_BIT(ss.dtype) & (CML_DSET_INT | CML_DSET_FLOAT))) {
      char text[CML__SHAPE_TEXT];
      st = cml_status_make(CML_STATUS_INVALID_ARGUMENT,
                           "%s: step %s must be a scalar of an integer or float dtype", name,
                           step ? cml__shape_text(&ss, text) : "(invalid)");
    }
  }
  for (size_t i = 0; st == CML_OK && i < count; ++i) {
    cml_shape_t ps;
    cml_builder_value_shape(f->builder, params[i], &ps);
    st = cml_optim_check(f, name, "m", i, m[i], &ps);
    if (st == CML_OK) st = cml_optim_check(f, name, "v", i, v[i], &ps);
  }
  if (st == CML_OK) {
    const double values[5] = {config->beta1, config->beta2, config->epsilon, config->weight_decay,
                              config->learning_rate};
    static const char* const names[5] = {"beta1", "beta2", "epsilon", "weight_decay",
                                         "learning_rate"};
    static const bool below_one[5] = {true, true, false, false, false};
    st = cml_optim_check_constants(f, name, params, count, values, names, lr_given ? 4 : 5,
                                   below_one);
  }
  if (st != CML_OK) return cml_optim_fail(f, st);
  const cml_adam_config_t* c = config;
  for (size_t i = 0; i < count; ++i) {
    cml_shape_t ps, ms, vs;
    cml_builder_value_shape(f->builder, params[i], &ps);
    cml_builder_value_shape(f->builder, m[i], &ms);
    cml_builder_value_shape(f->builder, v[i], &vs);
    const cml_dtype_t dt = cml_optim_compute_dtype(ps.dtype);
    cml_value_t p = cml_optim_as(f, params[i], dt), g = cml_optim_as(f, grads[i], dt);
    if (c->weight_decay > 0 && !c->decoupled) {
      g = cml_op_add(f, g, cml_op_mul(f, p, cml_optim_scalar(f, p, c->weight_decay)));
    }
    cml_value_t b1 = cml_optim_scalar(f, p, c->beta1), b2 = cml_optim_scalar(f, p, c->beta2);
    cml_value_t m1 = cml_op_add(f, cml_op_mul(f, cml_optim_as(f, m[i], dt), b1),
                                cml_op_mul(f, g, cml_optim_scalar(f, p, 1.0 - c->beta1)));
    cml_value_t v1 =
        cml_op_add(f, cml_op_mul(f, cml_optim_as(f, v[i], dt), b2),
                   cml_op_mul(f, cml_op_mul(f, g, g), cml_optim_scalar(f, p, 1.0 - c->beta2)));
    cml_value_t t = cml_optim_as(f, step, dt);
    cml_value_t one = cml_optim_scalar(f, p, 1.0);
    cml_value_t c1 = cml_op_sub(f, one, cml_op_pow(f, b1, t));
    cml_value_t c2 = cml_op_sub(f, one, cml_op_pow(f, b2, t));
    cml_value_t u = cml_op_div(
        f, cml_op_div(f, m1, c1),
        cml_op_add(f, cml_op_sqrt(f, cml_op_div(f, v1, c2)), cml_optim_scalar(f, p, c->epsilon)));
    if (c->weight_decay > 0 && c->decoupled) {
      u = cml_op_add(f, u, cml_op_mul(f, p, cml_optim_scalar(f, p, c->weight_decay)));
    }
    out_params[i] = cml_optim_as(
        f, cml_op_sub(f, p, cml_op_mul(f, u, cml_optim_lr(f, lr, p, c->learning_rate, dt))),
        ps.dtype);
    out_m[i] = cml_optim_as(f, m1, ms.dtype);
    out_v[i] = cml_optim_as(f, v1, vs.dtype);
  }
  cml_value_t* outs[3] = {out_params, out_m, out_v};
  return cml_optim_end(f, outs, 3, count);
}

cml_status_t cml_optim_adam_step(cml_function_t* f, const cml_adam_config_t* config,
                                 const cml_value_t* params, const cml_value_t* grads,
                                 const cml_value_t* m, const cml_value_t* v, size_t count,
                                 cml_value_t step, cml_value_t* out_params, cml_value_t* out_m,
                                 cml_value_t* out_v) {
  return cml_optim_adam(f, config, CML_VALUE_INVALID, false, params, grads, m, v, count, step,
                        out_params, out_m, out_v);
}

cml_status_t cml_optim_adam_step_with_learning_rate(
    cml_function_t* f, const cml_adam_config_t* config, cml_value_t learning_rate,
    const cml_value_t* params, const cml_value_t* grads, const cml_value_t* m, const cml_value_t* v,
    size_t count, cml_value_t step, cml_value_t* out_params, cml_value_t* out_m,
    cml_value_t* out_v) {
  return cml_optim_adam(f, config, learning_rate, true, params, grads, m, v, count, step,
                        out_params, out_m, out_v);
}

cml_status_t cml_optim_clip_by_global_norm(cml_function_t* f, const cml_value_t* grads,
                                           size_t count, double max_norm, cml_value_t* out_grads,
                                           cml_value_t* out_norm) {
  static const char* name = "ClipByGlobalNorm";
  cml_optim_clear(out_grads, count);
  if (out_norm) *out_norm = CML_VALUE_INVALID;
  CML_RETURN_IF_ERROR(cml_optim_usable(f, name));
  cml_status_t st = CML_OK;
  if (count == 0 || !grads || !out_grads) {
    st = cml_status_make(CML_STATUS_INVALID_ARGUMENT,
                         "%s: needs at least one gradient and an output array (count %zu)", name,
                         count);
  } else if (!(max_norm > 0) || !isfinite(max_norm)) {
    st = cml_status_make(CML_STATUS_INVALID_ARGUMENT, "%s: max_norm %g must be finite and > 0",
                         name, max_norm);
  }
  for (size_t i = 0; st == CML_OK && i < count; ++i) {
    st = cml_optim_check(f, name, "gradient", i, grads[i], NULL);
  }
  if (st != CML_OK) return cml_optim_fail(f, st);
  // The norm is computed in the widest compute dtype among the gradients (Float64 when one is
  // Float64): Float64 gradients of 3e40 summed in the first one's Float32 made the norm inf and
  // zeroed them.
  cml_shape_t s0;
  cml_builder_value_shape(f->builder, grads[0], &s0);
  cml_dtype_t dt = cml_optim_compute_dtype(s0.dtype);
  for (size_t i = 1; i < count; ++i) {
    cml_shape_t s;
    cml_builder_value_shape(f->builder, grads[i], &s);
    if (cml_dtype_bits(cml_optim_compute_dtype(s.dtype)) > cml_dtype_bits(dt)) {
      dt = cml_optim_compute_dtype(s.dtype);
    }
  }
  if (dt == CML_DTYPE_F32 && !(isfinite((float)max_norm) && (float)max_norm > 0)) {
    return cml_optim_fail(
        f, cml_status_make(CML_STATUS_INVALID_ARGUMENT,
                           "%s: max_norm %g is %g as a Float32 constant "
                           "(gradient #0 is %s, computed in Float32)",
                           name, max_norm, (double)(float)max_norm, cml_dtype_name(s0.dtype)));
  }
  cml_value_t total = CML_VALUE_INVALID;
  for (size_t i = 0; i < count; ++i) {
    cml_value_t g = cml_optim_as(f, grads[i], dt);
    cml_value_t sq = cml_op_reduce_sum(f, cml_op_mul(f, g, g), NULL, 0);
    total = total ? cml_op_add(f, total, sq) : sq;
  }
  cml_value_t norm = cml_op_sqrt(f, total);
  cml_value_t limit = cml_constant_scalar_f64(f, dt, max_norm);
  cml_value_t scale = cml_op_div(f, limit, cml_op_max(f, norm, limit));
  for (size_t i = 0; i < count; ++i) {
    cml_shape_t s;
    cml_builder_value_shape(f->builder, grads[i], &s);
    const cml_dtype_t gdt = cml_optim_compute_dtype(s.dtype);
    if (gdt == s.dtype) {
      out_grads[i] = cml_op_mul(f, grads[i], cml_optim_as(f, scale, s.dtype));
    } else {
      out_grads[i] = cml_optim_as(
          f, cml_op_mul(f, cml_optim_as(f, grads[i], gdt), cml_optim_as(f, scale, gdt)), s.dtype);
    }
  }
  if (out_norm) *out_norm = cml_optim_as(f, norm, s0.dtype);
  cml_value_t* outs[1] = {out_grads};
  cml_status_t end = cml_optim_end(f, outs, 1, count);
  if (end != CML_OK && out_norm) *out_norm = CML_VALUE_INVALID;
  return end;
}
