/tmp/xorflow-ns bench ysb --rate 55000 --duration 30s --processes 2 --workers 1 --sources 2 --rtt 0ms --json
