"""The Export page: CSV, HTML, figures, JSON, the script and the report folder of the survival
workbench and Describe."""
