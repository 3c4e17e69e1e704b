#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <math.h>
#include <libxsmm.h>
#include "cpukern.h"

static double now(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+1e-9*t.tv_nsec;}
static float *rnd(long n){float*p=aligned_alloc(64,((n*4+63)/64)*64);for(long i=0;i<n;i++)p[i]=(float)rand()/RAND_MAX-0.5f;return p;}

/* row-major C[m,n] = A[m,k] * B[k,n] via libxsmm column-major kernels on blocks:
   C^T (n x m) = B^T (n x k) * A^T (k x m); block bm (rows of C) x bn (cols of C). */
static void xsmm_nn(int m,int n,int k,const float*a,const float*b,float*c,int bm,int bn){
  float alpha=1,beta=0; int flags=0;
  for(int j=0;j<n;j+=bn){int nn=n-j<bn?n-j:bn;
    for(int i=0;i<m;i+=bm){int mm=m-i<bm?m-i:bm;
      libxsmm_blasint lda=n,ldb=k,ldc=n;
      libxsmm_smmfunction f=libxsmm_smmdispatch(nn,mm,k,&lda,&ldb,&ldc,&alpha,&beta,&flags,NULL);
      if(!f){fprintf(stderr,"no kernel %d %d %d\n",nn,mm,k);exit(1);}
      f(b+j,a+(long)i*k,c+(long)i*n+j);
    }}
}
static double best(void(*fn)(void*),void*arg,int reps){double b=1e9;for(int r=0;r<reps;r++){double t=now();fn(arg);t=now()-t;if(t<b)b=t;}return b;}
typedef struct{int m,n,k,bm,bn;float*a,*b,*c;}job;
static void run_ours(void*p){job*j=p;cpukern_sgemm(0,0,j->m,j->n,j->k,1,j->a,j->k,j->b,j->n,0,j->c,j->n,NULL,0,NULL);}
static void run_xsmm(void*p){job*j=p;xsmm_nn(j->m,j->n,j->k,j->a,j->b,j->c,j->bm,j->bn);}
int main(int argc,char**argv){
  libxsmm_init();
  cpukern_set_isa(cpukern_detect());
  int shapes[][3]={{256,256,256},{256,600,200},{1280,600,200},{1280,200,200},{256,200,200}};
  int blocks[][2]={{0,0},{256,64},{64,64},{32,64},{64,128},{16,64},{128,64},{64,32},{256,32}};
  for(int s=0;s<5;s++){
    int m=shapes[s][0],n=shapes[s][1],k=shapes[s][2];
    job j={m,n,k,0,0,rnd((long)m*k),rnd((long)k*n),rnd((long)m*n)};
    float*ref=rnd((long)m*n);
    run_ours(&j);memcpy(ref,j.c,sizeof(float)*m*n);
    double gf=2.0*m*n*k/1e9;
    double to=best(run_ours,&j,40);
    printf("NN %4dx%4dx%4d  ours %.3f ms (%.1f GF/s)",m,n,k,to*1e3,gf/to);
    for(int b=0;b<9;b++){
      j.bm=blocks[b][0]?blocks[b][0]:m; j.bn=blocks[b][1]?blocks[b][1]:n;
      run_xsmm(&j);
      double err=0;for(long i=0;i<(long)m*n;i++){double d=fabs(j.c[i]-ref[i]);if(d>err)err=d;}
      double tx=best(run_xsmm,&j,40);
      printf(" | xsmm %dx%d %.3f ms (%.1f, err %.1e)",j.bm,j.bn,tx*1e3,gf/tx,err);
    }
    printf("\n");
  }
  return 0;
}
