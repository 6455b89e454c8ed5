// Double-precision arithmetic: fma, division, sqrt, conversions.
extern "C" __global__ void double_prec(const double* x, double* y, long long* z, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    double v = x[i];
    double r = fma(v, 1.0000000000000002, 0.1) / (v + 3.0) + sqrt(fabs(v));
    y[i] = r;
    z[i] = (long long)r + __double2ll_rz(v) + (long long)(float)v;
}
