"""What every other layer leans on; imports nothing else of the package.

files       where the book's checkout is; files written whole or not at all
params      chapter parameters: types, ranges and the rules between them
progress    progress bars that stay out of notebook outputs
commands    the one dialect of every command that does not finish (one-line errors, exit statuses)
glued       values a chapter glued, read back out of its executed notebook
provenance  where a result came from: git revision, code hash, date, machine
figure_measures  whether a drawn figure reads on a phone: its smallest text, plot share, overlaps
"""
