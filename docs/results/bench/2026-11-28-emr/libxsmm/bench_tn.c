#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <math.h>
#include <libxsmm.h>
#include "cpukern.h"
static double now(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+1e-9*t.tv_nsec;}
static float *rnd(long n){float*p=aligned_alloc(64,((n*4+63)/64)*64);for(long i=0;i<n;i++)p[i]=(float)rand()/RAND_MAX-0.5f;return p;}
typedef struct{int m,n,k,bm,bn;float*a,*b,*c;}job;
/* row-major C[m,n] = A^T B, A stored k x m, B stored k x n */
static void run_ours(job*j){cpukern_sgemm(1,0,j->m,j->n,j->k,1,j->a,j->m,j->b,j->n,0,j->c,j->n,NULL,0,NULL);}
static void run_xsmm(job*j){float al=1,be=0;int fl=LIBXSMM_GEMM_FLAG_TRANS_B;
  for(int jj=0;jj<j->n;jj+=j->bn){int nn=j->n-jj<j->bn?j->n-jj:j->bn;
    for(int i=0;i<j->m;i+=j->bm){int mm=j->m-i<j->bm?j->m-i:j->bm;
      libxsmm_blasint lda=j->n,ldb=j->m,ldc=j->n;
      libxsmm_smmfunction f=libxsmm_smmdispatch(nn,mm,j->k,&lda,&ldb,&ldc,&al,&be,&fl,NULL);
      if(!f){fprintf(stderr,"no kernel\n");exit(1);}
      f(j->b+jj,j->a+i,j->c+(long)i*j->n+jj);}}}
int main(){libxsmm_init();cpukern_set_isa(cpukern_detect());
 int shapes[][3]={{200,600,1280},{200,600,256},{256,256,256},{200,200,1280}};
 int blocks[][2]={{0,0},{64,64},{32,64},{128,64},{256,32},{64,32}};
 for(int s=0;s<4;s++){int m=shapes[s][0],n=shapes[s][1],k=shapes[s][2];
  job j={m,n,k,0,0,rnd((long)k*m),rnd((long)k*n),rnd((long)m*n)};float*ref=rnd((long)m*n);
  run_ours(&j);memcpy(ref,j.c,4L*m*n);double gf=2.0*m*n*k/1e9;
  double b=1e9;for(int r=0;r<40;r++){double t=now();run_ours(&j);t=now()-t;if(t<b)b=t;}
  printf("TN %4dx%4dx%4d ours %.3f ms (%.1f)",m,n,k,b*1e3,gf/b);
  for(int q=0;q<6;q++){j.bm=blocks[q][0]?blocks[q][0]:m;j.bn=blocks[q][1]?blocks[q][1]:n;run_xsmm(&j);
   double err=0;for(long i=0;i<(long)m*n;i++){double d=fabs(j.c[i]-ref[i]);if(d>err)err=d;}
   double bx=1e9;for(int r=0;r<40;r++){double t=now();run_xsmm(&j);t=now()-t;if(t<bx)bx=t;}
   printf(" | %dx%d %.3f (%.1f, err %.0e)",j.bm,j.bn,bx*1e3,gf/bx,err);}
  printf("\n");}
 return 0;}
