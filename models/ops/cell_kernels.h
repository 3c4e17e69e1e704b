// Declarations of cell_kernels.c (see cgo.go).
void adm_gru_cell_fwd(int rows, int h, const float *gi, const float *bi, const float *gh,
                      const float *prev, float *gates, float *ghn, float *out);
void adm_gru_cell_bwd(int rows, int h, const float *gates, const float *ghn, const float *prev,
                      const float *g, float *dh, float *dgi, float *dgh);
void adm_swish_res_fwd(int n, const float *u, const float *x, const float *mask, float *sig, float *w);
void adm_swish_bwd(int n, const float *u, const float *sig, const float *dw, const float *mask, float *du);
void adm_swish(int n, float *y);
void adm_exp_n(int n, const float *x, float *y);
void adm_layernorm_fwd(int rows, int c, const float *w, const float *gamma, const float *beta, float *y,
                       float *xhat, float *inv, float eps);
void adm_layernorm_bwd(int rows, int c, const float *gy, const float *gamma, const float *xhat, const float *inv,
                       float *dw, float *prod);
