import math, random
import sys
D = sys.argv[1] if len(sys.argv) > 1 else 'testdata/proteins'  # run from the repository root
# Logistic regression on each graph's node-tag counts (standardized on the fold's training graphs), full-batch gradient descent, the shipped folds.
lines=open(D+'/PROTEINS.txt').read().split('\n')
G=int(lines[0]); i=1; X=[]; Y=[]
for g in range(G):
    n,l=map(int,lines[i].split()); i+=1
    c=[0,0,0]; e=0
    for v in range(n):
        p=list(map(int,lines[i].split())); i+=1
        c[p[0]]+=1; e+=p[1]
    X.append([c[0],c[1],c[2],n,math.log(n),e/2/n]); Y.append(l)
def fold(k,s): return [int(x) for x in open(D+f'/10fold_idx/{s}_idx-{k}.txt').read().split()]
def std(tr,X):
    d=len(X[0]); mu=[sum(X[j][f] for j in tr)/len(tr) for f in range(d)]
    sd=[math.sqrt(sum((X[j][f]-mu[f])**2 for j in tr)/len(tr))+1e-9 for f in range(d)]
    return [[(x[f]-mu[f])/sd[f] for f in range(d)] for x in X]
def logreg(tr,te,Z,feat,it=300,lr=0.5):
    w=[0.0]*(len(feat)+1)
    for _ in range(it):
        g=[0.0]*len(w)
        for j in tr:
            z=w[-1]+sum(w[a]*Z[j][f] for a,f in enumerate(feat)); p=1/(1+math.exp(-z)); d=p-Y[j]
            for a,f in enumerate(feat): g[a]+=d*Z[j][f]
            g[-1]+=d
        w=[w[a]-lr*g[a]/len(tr) for a in range(len(w))]
    acc=sum(((w[-1]+sum(w[a]*Z[j][f] for a,f in enumerate(feat)))>0)==(Y[j]==1) for j in te)/len(te)
    return acc
for feat,name in [([0,1,2],'counts'),([0,1,2,3,4,5],'counts+logn+deg')]:
    accs=[]
    for k in range(1,11):
        tr,te=fold(k,'train'),fold(k,'test'); Z=std(tr,X)
        accs.append(logreg(tr,te,Z,feat))
    m=sum(accs)/10; s=math.sqrt(sum((a-m)**2 for a in accs)/10)
    print(name, f"{100*m:.2f} ± {100*s:.2f}", [round(100*a,1) for a in accs])
