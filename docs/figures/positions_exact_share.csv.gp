set terminal png size 900,560
set output 'docs/figures/positions_exact_share.png'
set datafile separator ','
set logscale x 2
set format x '2^{%L}'
set yrange [0:1.05]
set grid
set key bottom left
set title 'Position ids 0..n-1 built in a low-precision dtype (torch.arange(n, dtype=...))'
set xlabel 'n (positions)'
set ylabel 'share of ids that keep their own value'
set arrow from 256, graph 0 to 256, graph 1 nohead dt 2 lc rgb '#1f77b4'
set arrow from 2048, graph 0 to 2048, graph 1 nohead dt 2 lc rgb '#d62728'
set arrow from 8192, graph 0 to 8192, graph 1 nohead dt 3 lc rgb 'gray'
set label 'BF16 at 8192: 896/8192 = 10.9 %' at 8192, 0.15 right offset -1,0
plot 'docs/figures/positions_exact_share.csv' every ::1 using 1:3 with lines lw 2 lc rgb '#1f77b4' title 'BF16', \
     '' every ::1 using 1:5 with lines lw 2 lc rgb '#d62728' title 'FP16'
