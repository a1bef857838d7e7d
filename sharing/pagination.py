from rest_framework.pagination import PageNumberPagination


class StandardPagination(PageNumberPagination):
    """count/next/previous/results pages; clients may ask for up to 500 rows."""

    page_size = 50
    page_size_query_param = "page_size"
    max_page_size = 500
