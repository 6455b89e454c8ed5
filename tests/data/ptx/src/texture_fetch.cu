// A 1D texture fetch as Rodinia's kmeans reads its features (tex1Dfetch), through a texture object:
// the emulator's PTX front end refuses `tex` by name and line.
extern "C" __global__ void tex_fetch(cudaTextureObject_t t, float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = tex1Dfetch<float>(t, i);
}
