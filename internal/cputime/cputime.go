package cputime
