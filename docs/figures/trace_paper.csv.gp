set terminal pngcairo size 1000,600
set output 'docs/figures/trace_paper.png'
set datafile separator ','
set key top left
set title "O[0,3] under paper (fa2), seed 1"
set xlabel 'accumulation step (keys in processing order)'
set ylabel 'cumulative error of the running O / running row sum'
set grid
plot 'docs/figures/trace_paper.csv' every ::1 using 1:10 with steps lw 2 title 'cumulative error (normalised)', \
     '' every ::1 using ($4==1 ? $1 : 1/0):10 with points pt 7 ps 1.2 lc rgb 'red' title 'P-bar = 1'
