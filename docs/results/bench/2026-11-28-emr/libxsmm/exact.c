#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>
#include <libxsmm.h>
#include "cpukern.h"
static float *rnd(long n){float*p=aligned_alloc(64,((n*4+63)/64)*64);for(long i=0;i<n;i++)p[i]=(float)rand()/RAND_MAX-0.5f;return p;}
int main(){libxsmm_init();cpukern_set_isa(cpukern_detect());
 int ns[]={8,16,32,48,64,72,200,600}; int ks[]={14,200,256};
 for(int a=0;a<8;a++)for(int q=0;q<3;q++){int m=64,n=ns[a],k=ks[q];
  float*A=rnd(m*k),*B=rnd(k*n),*C1=rnd(m*n),*C2=rnd(m*n);
  cpukern_sgemm(0,0,m,n,k,1,A,k,B,n,0,C1,n,NULL,0,NULL);
  float al=1,be=0;int fl=0;libxsmm_blasint la=n,lb=k,lc=n;
  libxsmm_smmfunction f=libxsmm_smmdispatch(n,m,k,&la,&lb,&lc,&al,&be,&fl,NULL);
  f(B,A,C2);int diff=0;for(int i=0;i<m*n;i++)if(C1[i]!=C2[i])diff++;
  /* reference: sequential fma chain */
  int dref1=0,dref2=0;for(int i=0;i<m;i++)for(int j=0;j<n;j++){float s=0;for(int p=0;p<k;p++)s=fmaf(A[i*k+p],B[p*n+j],s);if(s!=C1[i*n+j])dref1++;if(s!=C2[i*n+j])dref2++;}
  printf("n=%3d k=%3d: ours!=xsmm %5d  ours!=fmachain %5d  xsmm!=fmachain %5d\n",n,k,diff,dref1,dref2);}
}
