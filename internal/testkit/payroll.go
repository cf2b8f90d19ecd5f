package testkit

import "fmt"

// PayrollJSON is a 6-field JSON record like the demo stream's, varying
// with i.
func PayrollJSON(i int) []byte {
	return fmt.Appendf(nil, `{"position":"pos%d","experience":%d,"salary":%d,"taxGroup":"G%d","perc":0.%02d,"tax":%d.5}`,
		i%7, i%30, 30000+i%5000, i%5, i%40+10, i%9000)
}
